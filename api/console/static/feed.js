// The change feed of an agent root, live: GET /v1/agents/{agent}/events as server-sent
// events, read with fetch (an EventSource cannot send the key) and parsed here. What
// the feed held before the page connected is shown apart, as earlier events.
import { el, replace, notice } from './dom.js';
import { open, agentPath, describe, NetworkError, ApiError } from './api.js';
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
  const earlier = el('ol', { class: 'plain', id: 'feed-history', reversed: true });
  replace(ctx.main, el('h2', {}, 'Change feed of ', el('code', { text: agent })), state,
    el('h3', { id: 'feed-new-h', text: 'New events, since this page connected' }), list,
    el('h3', { id: 'feed-history-h', text: `Earlier events: what the feed already held when this page connected (the newest ${maxShown})` }), earlier);
  // The REST feed starts, without a position, at the oldest event it holds (api/rest/events.go):
  // those are not news, so the page first reads them with follow=false (the stream
  // ends at the events held when it was opened) into the list of earlier events, then
  // follows after the last of them, so only what happened since shows as new.
  // A stream ends when the node shuts down (a restart) or the connection breaks: the page
  // connects again and resumes after the last frame it showed (Last-Event-ID), so no
  // event is skipped or shown twice, waiting longer after each failure in a row.
  let last = '';
  let caughtUp = false;
  for (let failures = 0; ; ) {
    let why;
    const into = caughtUp ? list : earlier;
    try {
      const headers = last ? { 'Last-Event-ID': last } : {};
      const resp = await open(agentPath(agent) + '/events' + (caughtUp ? '' : '?follow=false'), { headers, signal: ctx.signal });
      state.textContent = caughtUp ? 'Live: new events appear at the top.' : 'Reading the events the feed already holds…';
      failures = 0;
      last = await follow(resp, into, last);
      if (!caughtUp) {
        caughtUp = true;
        continue;
      }
      why = `The stream ended (last event ${last || 'none'})`;
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      if (!(e instanceof NetworkError || (e instanceof ApiError && (e.status === 503 || e.status === 502 || e.body.retryable === true)))) {
        if (e instanceof ApiError && e.code === 'FeedExpired' && e.body.details && e.body.details.resume_after) {
          into.prepend(el('li', { class: 'notice unknown', text: `Events after ${last} are no longer held: the feed goes on after ${e.body.details.resume_after}.` }));
          last = e.body.details.resume_after;
          continue;
        }
        if (e.status === 401) throw e; // the key stopped working: app.js asks for another
        replace(state, notice('error', describe(e)));
        return;
      }
      why = describe(e);
      failures++;
    }
    const wait = Math.min(10, 2 ** Math.min(failures, 4)) * 500;
    state.textContent = `${why}; connecting again in ${wait / 1000} s…`;
    if (!await sleep(wait, ctx.signal)) return;
  }
}

// follow shows the frames of one stream as they come, newest at the top, and answers the
// id of the last one shown (last when none came).
async function follow(resp, list, last) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return last;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = parse(buf.slice(0, i));
        buf = buf.slice(i + 2);
        if (!frame.event) continue;
        if (frame.id) last = frame.id;
        list.prepend(el('li', { 'data-id': frame.id }, el('code', { text: frame.id }), ' ', el('strong', { text: frame.event }), ' ', el('span', { class: 'mono', text: frame.data })));
        while (list.childElementCount > maxShown) list.lastElementChild.remove();
        if (frame.event === 'error') { // the node ends the stream with the error envelope
          let env = null;
          try { env = JSON.parse(frame.data); } catch { env = null; }
          // A key revoked or expired while the stream was open is a refused key (401).
          throw new ApiError(env && env.code === 'Unauthenticated' ? 401 : 200, env, frame.data);
        }
      }
    }
  } catch (e) {
    if ((e && e.name === 'AbortError') || e instanceof ApiError) throw e;
    throw new NetworkError(`the stream broke after ${last || 'no event'} (${e && e.message ? e.message : e})`);
  }
}

// sleep waits ms, answering false when signal aborts first.
function sleep(ms, signal) {
  return new Promise(resolve => {
    if (signal.aborted) return resolve(false);
    const t = setTimeout(() => { signal.removeEventListener('abort', stop); resolve(true); }, ms);
    const stop = () => { clearTimeout(t); resolve(false); };
    signal.addEventListener('abort', stop, { once: true });
  });
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
