// The Browse destination: the agent roots a key reaches, their workbenches, files by
// section, a file's history with two versions diffed, and snapshots and commits with
// their diff against live (the REST routes of api/rest).
import { el, replace, short, table, diffView, link, notice, parts, visible } from './dom.js';
import { request, open, wbPath, agentPath, filePath, describe, ApiError, allPages } from './api.js';

const enc = encodeURIComponent;
// maxShownBytes bounds the bytes of a file the page shows (a Range request).
const maxShownBytes = 256 * 1024;
// pageSize is how many rows one page of a listing shows (workbenches, entries, versions,
// changed paths); "Show more" reads the next page with the listing's cursor.
const pageSize = 100;
// commitPage is how many commits one page of the listing shows (GET …/commits, newest
// first; "Show older commits" reads the next page).
const commitPage = 20;

// route: #/browse, #/browse/<agent>, #/browse/<agent>/<wb>[/<dir path>],
// #/browse/<agent>/<wb>/~file/<path>, #/browse/<agent>/<wb>/~diff/<side>.
export function route(ctx, agent, wb, ...rest) {
  if (!agent) return agents(ctx);
  if (!wb) return workbenches(ctx, agent);
  if (rest[0] === '~file') return fileView(ctx, agent, wb, rest.slice(1).join('/'));
  if (rest[0] === '~diff') return treeDiff(ctx, agent, wb, rest[1]);
  return workbench(ctx, agent, wb, rest.join('/'));
}

// agentChooser is a form naming an agent root, for a key that reaches every root.
export function agentChooser(ctx, dest, label) {
  const input = el('input', { id: 'agent-input', type: 'text', value: ctx.session.principal.tenant || 'default', required: true });
  const form = el('form', { class: 'row', 'aria-label': label },
    el('label', { for: 'agent-input', text: 'Agent root' }), input, el('button', { type: 'submit', text: 'Open' }));
  form.addEventListener('submit', ev => { ev.preventDefault(); location.hash = `#/${dest}/${enc(input.value.trim())}`; });
  return form;
}

function agents(ctx) {
  const list = ctx.agents();
  replace(ctx.main, el('h2', { text: 'Browse' }),
    el('p', { class: 'muted', text: 'The agent roots this key reaches.' }),
    list.length ? el('ul', { class: 'plain', id: 'agents' }, list.map(a => el('li', {}, link(a, 'browse', a)))) : null,
    ctx.session.principal.all_agents ? agentChooser(ctx, 'browse', 'Open an agent root') : null);
}

// paged renders the first page of a cursor-paged listing as a table (rows: the page's
// array named key) and a "Show more" button that appends the next page (next(cursor)
// answers it) while the listing has more. A live listing's cursor fails once it changed
// (409 ReadFenceChanged): the listing is then read again from its first page, as far as
// shown and a page more, and replaces the rows, so the table never mixes two states.
export function paged(ctx, cols, first, key, next, caption, what) {
  const t = table(cols, first[key] || [], caption);
  const rows = list => list.map(r => el('tr', {}, cols.map(([, f]) => el('td', {}, f(r)))));
  const step = Math.max((first[key] || []).length, 1);
  const more = el('button', { type: 'button', class: 'show-more', text: `Show more ${what}` });
  const note = el('p', { class: 'hint' });
  const out = el('div', {}, t, note, more);
  let cursor = first.next_cursor || null;
  more.hidden = !cursor;
  more.addEventListener('click', async () => {
    more.disabled = true;
    replace(note);
    try {
      try {
        const page = await next(cursor);
        t.tBodies[0].append(...rows(page[key] || []));
        cursor = page.next_cursor || null;
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 'ReadFenceChanged')) throw e;
        const again = await allPages(next, key, t.tBodies[0].rows.length + step);
        replace(t.tBodies[0], rows(again.items));
        cursor = again.cursor || null;
        note.textContent = `The ${what} changed meanwhile: listed again from the start.`;
      }
      more.hidden = !cursor;
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      more.hidden = true;
      out.append(notice('error', describe(e)));
    } finally {
      more.disabled = false;
    }
  });
  return out;
}

const cursorParam = cursor => cursor ? '&cursor=' + enc(cursor) : '';

async function workbenches(ctx, agent) {
  const get = cursor => request('GET', `${agentPath(agent)}/workbenches?limit=${pageSize}${cursorParam(cursor)}`, { signal: ctx.signal });
  const r = await get('');
  replace(ctx.main, el('p', {}, link('← Agents', 'browse')),
    el('h2', {}, 'Workbenches of ', el('code', { text: agent })),
    el('p', {}, link('Follow the change feed', 'feed', agent)),
    paged(ctx, [
      ['Workbench', w => link(w.workbench_id, 'browse', agent, w.workbench_id)],
      ['Files', w => String(w.file_count)],
      ['Bytes', w => String(w.size_bytes)],
      ['Revision', w => String(w.revision)],
      ['Created', w => w.created_at],
      ['Head commit', w => w.head_commit ? commitCell(agent, w) : el('span', { class: 'muted', text: 'none' })],
    ], r, 'workbenches', get, 'Workbenches', 'workbenches'));
}

function commitCell(agent, w) {
  const id = typeof w.head_commit === 'string' ? w.head_commit : (w.head_commit.commit_identity || '');
  return el('span', {}, short(id), ' ', link('diff against live', 'browse', agent, w.workbench_id, '~diff', 'commit:' + id));
}

async function workbench(ctx, agent, wb, dir) {
  const list = cursor => request('GET', `${wbPath(agent, wb)}/list?limit=${pageSize}${dir ? '&path=' + enc(dir) : ''}${cursorParam(cursor)}`, { signal: ctx.signal });
  const [listing, snaps, commits] = await Promise.all([
    list(''),
    dir ? null : request('GET', wbPath(agent, wb) + '/snapshots', { signal: ctx.signal }),
    dir ? null : commitsPage(ctx, agent, wb, ''),
  ]);
  const up = dir ? dir.split('/').slice(0, -1) : null;
  replace(ctx.main,
    el('p', {}, link('← Workbenches', 'browse', agent), dir ? [' · ', link('↑ up', 'browse', agent, wb, ...up)] : null),
    el('h2', {}, el('code', { text: `${wb}/${dir}` })),
    paged(ctx, [
      ['Name', e => e.kind === 'directory' ? link(e.name + '/', 'browse', agent, wb, ...(dir ? dir.split('/') : []), e.name)
        : link(e.name, 'browse', agent, wb, '~file', ...(dir ? dir.split('/') : []), e.name)],
      ['Kind', e => e.kind],
      ['Bytes', e => String(e.size_bytes)],
      ['Type', e => e.content_type || ''],
      ['Generation', e => e.generation ? String(e.generation) : ''],
    ], listing, 'entries', list, dir ? 'Entries' : 'Sections', 'entries'),
    snaps ? snapshotsView(agent, wb, snaps.snapshots || []) : null,
    commits ? commitsView(ctx, agent, wb, commits) : null);
}

// commitsPage reads one page of wb's commits (GET …/commits: newest first), after the
// page cursor names ('' for the newest).
function commitsPage(ctx, agent, wb, cursor) {
  const c = cursor ? '&cursor=' + enc(cursor) : '';
  return request('GET', `${wbPath(agent, wb)}/commits?limit=${commitPage}${c}`, { signal: ctx.signal });
}

// commitsView lists the commits of the first page, each with its diff against live, and
// reads the older ones a page at a time.
function commitsView(ctx, agent, wb, first) {
  const columns = [
    ['Commit', x => el('span', {}, short(x.commit_identity), x.head ? el('span', { class: 'badge', text: 'head' }) : null)],
    ['Committed', x => x.committed_at],
    ['Generation', x => String(x.generation)],
    ['By', x => x.producer || ''],
    ['', x => link('diff against live', 'browse', agent, wb, '~diff', 'commit:' + x.commit_identity)],
  ];
  const rows = el('div', {});
  const older = el('button', { type: 'button', id: 'older-commits', text: 'Show older commits' });
  let cursor = null;
  const show = page => {
    const list = page.commits || [];
    if (list.length) rows.append(table(columns, list, 'Commits, newest first'));
    cursor = page.next_cursor || null;
    older.hidden = !cursor;
  };
  older.addEventListener('click', async () => {
    try {
      show(await commitsPage(ctx, agent, wb, cursor));
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      rows.append(notice('error', describe(e)));
    }
  });
  show(first);
  return el('section', { 'aria-labelledby': 'commits-h', id: 'commits' }, el('h3', { id: 'commits-h', text: 'Commits' }),
    el('p', { class: 'muted', text: 'Newest first: every sealed commit of this workbench, replaced ones too.' }),
    (first.commits || []).length ? rows : el('p', { class: 'muted', text: 'No commits.' }), older);
}

function snapshotsView(agent, wb, snaps) {
  return el('section', { 'aria-labelledby': 'snaps-h' }, el('h3', { id: 'snaps-h', text: 'Snapshots' }),
    snaps.length ? table([
      ['Snapshot', s => el('span', {}, String(s.snapshot_id), s.name ? parts` (${s.name})` : null)],
      ['State', s => s.state],
      ['Created', s => s.created_at],
      ['Read version', s => String(s.read_version)],
      ['', s => link('diff against live', 'browse', agent, wb, '~diff', 'snapshot:' + s.snapshot_id)],
    ], snaps) : el('p', { class: 'muted', text: 'No snapshots.' }));
}

async function treeDiff(ctx, agent, wb, side) {
  const changes = cursor => request('GET', `${wbPath(agent, wb)}/diff?from=${enc(side)}&to=live&limit=${pageSize}${cursorParam(cursor)}`, { signal: ctx.signal });
  const r = await changes('');
  const detail = el('div', { id: 'file-diff' });
  const show = async path => {
    try {
      const d = await request('GET', `${wbPath(agent, wb)}/diff?from=${enc(side)}&to=live&path=${enc(path)}`, { signal: ctx.signal });
      replace(detail, el('h3', {}, el('code', { text: path })), diffView(d, `Diff of ${path}`));
    } catch (e) {
      replace(detail, notice('error', describe(e)));
    }
  };
  replace(ctx.main, el('p', {}, link('← ' + wb, 'browse', agent, wb)),
    el('h2', {}, el('code', { text: side }), ' against live'),
    (r.changes || []).length ? paged(ctx, [
      ['Path', c => el('code', { text: c.path })],
      ['Change', c => c.change],
      ['', c => el('button', { type: 'button', onclick: () => show(c.path), text: 'Show diff' })],
    ], r, 'changes', changes, 'Changed paths', 'changed paths') : el('p', { class: 'muted', text: 'No differences.' }),
    detail);
}

async function fileView(ctx, agent, wb, path) {
  const history = cursor => request('GET', `${wbPath(agent, wb)}/history?path=${enc(path)}&limit=${pageSize}${cursorParam(cursor)}`, { signal: ctx.signal });
  const hist = await history('');
  const content = el('pre', { id: 'file-content', tabindex: '0', 'aria-label': 'Content of ' + path });
  const diffOut = el('div', { id: 'history-diff' });
  // A deletion (tombstone) is a row of its own, with no body to diff.
  const bodies = (hist.versions || []).filter(v => !v.tombstone);
  const radios = (name, checkedIdx) => v => {
    if (v.tombstone) return '';
    const i = bodies.indexOf(v);
    return el('input', { type: 'radio', name, value: String(v.generation), 'aria-label': `${name} generation ${v.generation}`, checked: i === checkedIdx });
  };
  const compare = el('button', { type: 'button', id: 'compare-versions', text: 'Diff the two versions' });
  compare.addEventListener('click', async () => {
    const from = ctx.main.querySelector('input[name=from]:checked');
    const to = ctx.main.querySelector('input[name=to]:checked');
    if (!from || !to) return;
    try {
      const d = await request('GET', `${wbPath(agent, wb)}/diff?path=${enc(path)}&from=generation:${from.value}&to=generation:${to.value}`, { signal: ctx.signal });
      replace(diffOut, diffView(d, `Generation ${from.value} to ${to.value}`));
    } catch (e) {
      replace(diffOut, notice('error', describe(e)));
    }
  });
  const dirParts = path.split('/').slice(0, -1);
  replace(ctx.main, el('p', {}, link('← ' + (dirParts.join('/') || wb), 'browse', agent, wb, ...dirParts)),
    el('h2', {}, el('code', { text: path })),
    el('h3', { text: 'Content' }), content,
    el('h3', { text: 'History' }),
    paged(ctx, [
      ['From', radios('from', 1)],
      ['To', radios('to', 0)],
      ['Generation', v => String(v.generation)],
      ['When', v => v.at],
      ['Bytes', v => v.tombstone ? el('span', { class: 'badge', text: 'deleted' }) : String(v.size_bytes)],
      ['By', v => v.producer ? parts`${v.producer.principal} via ${v.producer.surface}` : ''],
      ['Digest', v => v.tombstone ? '' : short(v.digest_uri)],
    ], hist, 'versions', history, 'Retained versions, newest first', 'versions'),
    bodies.length > 1 ? compare : null, diffOut);
  try {
    const resp = await open(`${wbPath(agent, wb)}/files/${filePath(path)}`, { headers: { Range: `bytes=0-${maxShownBytes - 1}` }, signal: ctx.signal });
    showBody(content, new Uint8Array(await resp.arrayBuffer()), bodySize(resp));
  } catch (e) {
    if (e && e.name === 'AbortError') return;
    content.textContent = visible(describe(e));
  }
}

// bodySize is the size of the whole file a (ranged) GET answered part of: a 206's
// Content-Range total, else its Content-Length (-1: not said).
function bodySize(resp) {
  const m = /\/(\d+)\s*$/.exec(resp.headers.get('Content-Range') || '');
  if (m) return Number(m[1]);
  const n = resp.headers.get('Content-Length');
  return n === null ? -1 : Number(n);
}

// showBody shows the first bytes of a file of size bytes in pre as text: UTF-8 text as
// is (a character the cut split is left out), saying when only the start is shown; a
// body that is not UTF-8 text (a NUL byte, an invalid sequence) only as its size, with a
// button that shows it anyway (each invalid sequence as U+FFFD).
function showBody(pre, bytes, size) {
  const cut = size > bytes.length;
  const note = cut ? `\n… (only the first ${bytes.length} of ${size} bytes shown)` : '';
  let text = null;
  if (!bytes.includes(0)) {
    try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: cut }); } catch { text = null; }
  }
  if (text !== null) {
    pre.textContent = text + note;
    return;
  }
  const anyway = el('button', { type: 'button', id: 'show-binary', text: 'Show it anyway' });
  anyway.addEventListener('click', () => { pre.textContent = new TextDecoder('utf-8').decode(bytes, { stream: cut }) + note; });
  replace(pre, el('span', { class: 'muted', id: 'binary-note', text: `Not UTF-8 text (binary?): ${size >= 0 ? size : bytes.length} bytes, not shown. ` }), anyway);
}
