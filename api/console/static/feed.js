// The change feed of an agent root, live: GET /v1/agents/{agent}/events as server-sent
// events, read with fetch (an EventSource cannot send the key) and parsed here.
import { el, replace, notice } from './dom.js';
import { open, agentPath, describe } from './api.js';
import { agentChooser } from './browse.js';

// maxShown bounds the frames on screen; older ones are dropped.
const maxShown = 200;

export async function view(ctx, agent) {
  if (!agent) {
    const list = ctx.agents();
    replace(ctx.main, el('h2', { text: 'Change feed' }),
      list.length ? el('ul', { class: 'plain' }, list.map(a => el('li', {}, el('a', { href: '#/feed/' + encodeURIComponent(a), text: a })))) : null,
      ctx.session.principal.all_agents ? agentChooser(ctx, 'feed', 'Follow an agent root') : null);
    return;
  }
  const state = el('p', { class: 'muted', id: 'feed-state', text: 'Connecting…' });
  const list = el('ol', { class: 'plain', id: 'feed', reversed: true, 'aria-live': 'off' });
  replace(ctx.main, el('h2', {}, 'Change feed of ', el('code', { text: agent })), state, list);
  let last = '';
  const headers = {};
  const resp = await open(agentPath(agent) + '/events', { headers, signal: ctx.signal });
  state.textContent = 'Live: new events appear at the top.';
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = parse(buf.slice(0, i));
        buf = buf.slice(i + 2);
        if (!frame.event) continue;
        if (frame.id) last = frame.id;
        list.prepend(el('li', { 'data-id': frame.id }, el('code', { text: frame.id }), ' ', el('strong', { text: frame.event }), ' ', el('span', { class: 'mono', text: frame.data })));
        while (list.childElementCount > maxShown) list.lastElementChild.remove();
      }
    }
    state.textContent = `The stream ended (last event ${last || 'none'}).`;
  } catch (e) {
    if (e && e.name === 'AbortError') return;
    replace(state, notice('error', describe(e)));
  }
}

// parse reads one SSE frame: its id, event and data lines.
function parse(text) {
  const f = { id: '', event: '', data: '' };
  for (const line of text.split('\n')) {
    if (line.startsWith(':')) continue;
    const at = line.indexOf(':');
    const k = at < 0 ? line : line.slice(0, at);
    const v = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
    if (k === 'id') f.id = v;
    else if (k === 'event') f.event = v;
    else if (k === 'data') f.data = f.data ? f.data + '\n' + v : v;
  }
  return f;
}
