// The Documents destination (docs/documents.md, the design's UI): the list, creating a
// document from an observation, and a document's detail view with the editor, sources,
// proposals and versions. Every write goes through api.write: a client id held in page
// state, reused after a network failure.
import { el, replace, notice, short, table, diffView, link, outcomeUnknown, parts } from './dom.js';
import { request, write, ApiError, describe } from './api.js';

const base = '/api/workbench';
const enc = encodeURIComponent;

// What the operator was typing into a create form, kept across reloads of the list.
const createForm = { eventId: null, title: '', body: '' };

export async function list(ctx) {
  if (!ctx.session.documents) {
    replace(ctx.main, el('h2', { text: 'Documents' }),
      notice('error', 'This key owns no working documents: it is not bound to a tenant and workspace.'));
    return;
  }
  const [docs, cands] = await Promise.all([
    request('GET', base + '/documents', { signal: ctx.signal }),
    request('GET', base + '/candidates', { signal: ctx.signal }),
  ]);
  const rows = docs.documents || [];
  const obs = (cands.candidates || []).filter(c => c.kind === 'observation').slice(0, 30);
  const o = ctx.session.documents;
  replace(ctx.main,
    el('h2', { text: 'Documents' }),
    el('p', { class: 'muted', text: `Working documents of ${o.tenant}/${o.workspace}.` }),
    rows.length ? table([
      ['Title', d => link(d.title || '(untitled)', 'documents', d.documentId)],
      ['Updated', d => d.updatedAt],
      ['Versions', d => String(d.versions)],
      ['Document', d => short(d.documentId)],
    ], rows, 'Working documents') : el('p', { class: 'muted', text: 'No working documents yet.' }),
    docs.truncated ? el('p', { class: 'muted', text: 'More documents exist than shown.' }) : null,
    el('h3', { text: 'Observations' }),
    el('p', { class: 'muted', text: 'The newest observations of the agent root; a working document starts from one.' }),
    el('ul', { class: 'plain', id: 'observations' }, obs.map(c => observation(ctx, c))));
}

function observation(ctx, c) {
  const li = el('li', { 'data-event': c.eventId },
    el('div', {}, el('strong', { text: c.type }), ' ', el('span', { class: 'muted' }, parts`${c.source} · ${c.occurredAt}`), ' ', short(c.eventId)),
    el('details', {}, el('summary', { text: 'Excerpt' }), el('pre', { body: c.excerpt || '' })));
  if (ctx.canWriteDocuments()) {
    const open = el('button', { type: 'button', class: 'create-doc', text: 'Create working document' });
    open.addEventListener('click', () => {
      createForm.eventId = c.eventId;
      li.append(createFormView(ctx, c));
      open.remove();
    });
    li.append(createForm.eventId === c.eventId ? createFormView(ctx, c) : open);
  }
  return li;
}

function createFormView(ctx, c) {
  const title = el('input', { id: 'new-title', type: 'text', maxlength: '200', value: createForm.title, required: true });
  const body = el('textarea', { id: 'new-body', rows: '8' });
  body.value = createForm.body;
  title.addEventListener('input', () => { createForm.title = title.value; });
  body.addEventListener('input', () => { createForm.body = body.value; });
  const form = el('form', { class: 'card', 'aria-label': 'Create a working document' },
    el('div', { class: 'field' }, el('label', { for: 'new-title', text: 'Title' }), title),
    el('div', { class: 'field' }, el('label', { for: 'new-body', text: 'Body (Markdown)' }), body),
    el('button', { type: 'submit', class: 'primary', id: 'create-submit', text: 'Create' }));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    await create(ctx, c.eventId, title.value, body.value);
  });
  return form;
}

async function create(ctx, originEventId, title, body) {
  const payload = { originEventId, title, body };
  try {
    const r = await write('create:' + originEventId, payload, id =>
      request('POST', base + '/documents', { json: { ...payload, requestId: id } }));
    if (r.unknown) return unknown(ctx, r, () => create(ctx, originEventId, title, body));
    createForm.eventId = null; createForm.title = ''; createForm.body = '';
    ctx.say('ok', 'Created the working document.');
    location.hash = '#/documents/' + enc(r.data.documentId);
  } catch (e) {
    ctx.say('error', describe(e));
  }
}

// unknown reports a write whose outcome is unknown (dom.js outcomeUnknown).
function unknown(ctx, r, retry) { return outcomeUnknown(ctx, r.id, 'write', retry); }

// draftPrefix begins the localStorage key of every draft: cairn.draft.<tenant>/<workspace>/<id>.
const draftPrefix = 'cairn.draft.';

function draftKey(ctx, id) {
  const o = ctx.session.documents;
  return `${draftPrefix}${o.tenant}/${o.workspace}/${id}`;
}

// draftKeys lists the localStorage keys of every draft this browser holds, of any key's
// owner.
export function draftKeys() {
  const keys = [];
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i);
    if (k !== null && k.startsWith(draftPrefix)) keys.push(k);
  }
  return keys;
}

function loadDraft(ctx, id) {
  try { return JSON.parse(localStorage.getItem(draftKey(ctx, id)) || 'null'); } catch { return null; }
}

export async function detail(ctx, id) {
  if (!ctx.session.documents) return list(ctx);
  const [d, cands] = await Promise.all([
    request('GET', `${base}/documents/${enc(id)}`, { signal: ctx.signal }),
    request('GET', `${base}/candidates?documentId=${enc(id)}`, { signal: ctx.signal }),
  ]);
  const doc = d.document;
  replace(ctx.main,
    el('p', {}, link('← Documents', 'documents')),
    el('h2', { id: 'doc-title', text: doc.title || '(untitled)' }),
    el('p', { class: 'muted' }, 'Document ', short(doc.documentId), ' · head ', el('code', { id: 'head-version', title: doc.versionId, text: doc.versionId.slice(0, 12) + '…' }),
      ` · ${doc.versions} versions · from observation `, short(doc.originEventId)),
    el('div', { class: 'cols' },
      el('div', {}, editor(ctx, d), proposals(ctx, d)),
      el('div', {}, sources(ctx, d, cands.candidates || []), versions(d), judgments(d))));
}

function editor(ctx, d) {
  const doc = d.document;
  const head = doc.versionId;
  if (!ctx.canWriteDocuments()) {
    return el('section', { 'aria-labelledby': 'body-h' }, el('h3', { id: 'body-h', text: 'Body' }), el('pre', { id: 'doc-body', body: d.body }));
  }
  const key = draftKey(ctx, doc.documentId);
  const draft = loadDraft(ctx, doc.documentId);
  const baseVersionId = draft ? draft.baseVersionId : head;
  const title = el('input', { id: 'edit-title', type: 'text', maxlength: '200', value: draft ? draft.title : doc.title });
  const body = el('textarea', { id: 'edit-body', rows: '16' });
  body.value = draft ? draft.body : d.body;
  const keep = () => localStorage.setItem(key, JSON.stringify({ title: title.value, body: body.value, baseVersionId }));
  title.addEventListener('input', keep);
  body.addEventListener('input', keep);
  const discard = el('button', { type: 'button', id: 'discard-draft', text: 'Discard draft' });
  discard.addEventListener('click', () => { localStorage.removeItem(key); ctx.rerender(); });
  const form = el('form', { 'aria-labelledby': 'editor-h' },
    el('h3', { id: 'editor-h', text: 'Editor' }),
    draft ? el('p', { class: 'hint', id: 'draft-note', text: baseVersionId === head
      ? 'Unsaved draft (kept in this browser until saved).'
      : `Unsaved draft begun on version ${baseVersionId.slice(0, 12)}…, which is no longer the head: saving it will be refused as stale. Discard it to edit the head.` }) : null,
    el('div', { class: 'field' }, el('label', { for: 'edit-title', text: 'Title' }), title),
    el('div', { class: 'field' }, el('label', { for: 'edit-body', text: 'Body (Markdown)' }), body),
    el('div', { class: 'row' }, el('button', { type: 'submit', class: 'primary', id: 'save-version', text: 'Save version' }), draft ? discard : null));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    save(ctx, doc.documentId, { baseVersionId, title: title.value, body: body.value });
  });
  return form;
}

async function save(ctx, docID, payload) {
  try {
    const r = await write('edit:' + docID, payload, id =>
      request('POST', `${base}/documents/${enc(docID)}/versions`, { json: { ...payload, requestId: id } }));
    if (r.unknown) return unknown(ctx, r, () => save(ctx, docID, payload));
    localStorage.removeItem(draftKey(ctx, docID));
    ctx.say('ok', r.data.versionId ? `Saved version ${r.data.versionId}.` : 'No change: the text is the head\'s.');
    ctx.rerender();
  } catch (e) {
    if (e instanceof ApiError && e.code === 'StaleBaseError') {
      ctx.say('error', `Not saved: the document changed meanwhile (StaleBaseError; head is now ${e.body.headVersionId}). Your draft is kept; discard it to edit the head.`);
      return ctx.rerender();
    }
    ctx.say('error', describe(e));
  }
}

function sources(ctx, d, candidates) {
  const doc = d.document;
  const checks = candidates.map((c, i) => {
    const idv = c.kind === 'version' ? c.versionId : c.eventId;
    const box = el('input', { type: 'checkbox', id: 'cand-' + i, 'data-kind': c.kind, value: idv, disabled: !ctx.canWriteDocuments() });
    return { box, li: el('li', {}, box, ' ', el('label', { for: 'cand-' + i }, c.kind === 'version' ? `version ${idv.slice(0, 12)}…` : parts`${c.type} · ${c.occurredAt}`),
      c.excerpt ? el('details', {}, el('summary', { text: 'Excerpt' }), el('pre', { body: c.excerpt })) : null) };
  });
  const record = el('button', { type: 'button', id: 'record-selection', text: 'Record selection' });
  record.addEventListener('click', () => select(ctx, doc.documentId, {
    selectedEventIds: checks.filter(c => c.box.checked && c.box.dataset.kind !== 'version').map(c => c.box.value),
    selectedVersionIds: checks.filter(c => c.box.checked && c.box.dataset.kind === 'version').map(c => c.box.value),
  }));
  const sels = d.selections || [];
  return el('section', { 'aria-labelledby': 'sources-h' },
    el('h3', { id: 'sources-h', text: 'Sources' }),
    el('p', { class: 'hint', text: 'The evidence you select for a proposal. A runner receives this snapshot plus the current document head, and nothing else.' }),
    el('ul', { class: 'plain', id: 'candidates' }, checks.map(c => c.li)),
    ctx.canWriteDocuments() ? record : null,
    el('h3', { text: 'Selections' }),
    sels.length ? el('ul', { class: 'plain', id: 'selections' }, sels.map(s => el('li', {}, short(s.selectionId),
      ` · ${s.selectedEventIds.length} events, ${(s.selectedVersionIds || []).length} versions`))) : el('p', { class: 'muted', text: 'No selection yet.' }),
    ctx.canWriteDocuments() && sels.length ? requestForm(ctx, d) : null);
}

async function select(ctx, docID, payload) {
  try {
    const r = await write('select:' + docID, payload, id =>
      request('POST', `${base}/documents/${enc(docID)}/selections`, { json: { ...payload, requestId: id } }));
    if (r.unknown) return unknown(ctx, r, () => select(ctx, docID, payload));
    ctx.say('ok', `Recorded selection ${r.data.selectionId}.`);
    ctx.rerender();
  } catch (e) {
    ctx.say('error', describe(e));
  }
}

function requestForm(ctx, d) {
  const sels = d.selections;
  const sel = el('select', { id: 'proposal-selection' }, sels.map((s, i) => el('option', { value: s.selectionId, selected: i === sels.length - 1 },
    `${s.selectionId.slice(0, 12)}… (${s.selectedEventIds.length} events, ${(s.selectedVersionIds || []).length} versions)`)));
  const runner = el('select', { id: 'proposal-runner' }, ctx.session.runners.map(r => el('option', { value: r.id }, `${r.label} (${r.id})`)));
  const go = el('button', { type: 'button', class: 'primary', id: 'request-proposal', text: 'Request proposal' });
  go.addEventListener('click', () => propose(ctx, d.document.documentId,
    { selectionId: sel.value, runnerId: runner.value, baseVersionId: d.document.versionId }));
  return el('div', { class: 'card' },
    el('div', { class: 'field' }, el('label', { for: 'proposal-selection', text: 'Selection' }), sel),
    el('div', { class: 'field' }, el('label', { for: 'proposal-runner', text: 'Runner' }), runner),
    go);
}

async function propose(ctx, docID, payload) {
  try {
    const r = await write('propose:' + docID, payload, id =>
      request('POST', `${base}/documents/${enc(docID)}/proposals`, { json: { ...payload, requestId: id } }));
    if (r.unknown) return unknown(ctx, r, () => propose(ctx, docID, payload));
    ctx.say('ok', `The runner proposed ${r.data.proposalEventId}.`);
    ctx.rerender();
  } catch (e) {
    const extra = e instanceof ApiError && e.body.errorText ? ` (${e.body.errorText})` : '';
    ctx.say('error', describe(e) + extra);
  }
}

function proposals(ctx, d) {
  const ps = [...(d.proposals || [])].reverse();
  return el('section', { 'aria-labelledby': 'proposals-h' },
    el('h3', { id: 'proposals-h', text: 'Proposals' }),
    ps.length ? ps.map(p => proposalCard(ctx, p)) : el('p', { class: 'muted', text: 'No proposals yet.' }));
}

function proposalCard(ctx, p) {
  const pr = p.proposal || {};
  const open = p.state === 'pending' || p.state === 'stale';
  const card = el('article', { class: 'card proposal', 'data-proposal': p.proposalEventId, 'aria-label': 'Proposal ' + p.proposalEventId },
    el('div', { class: 'row' }, el('span', { class: 'badge ' + p.state, text: p.state }), short(p.proposalEventId),
      el('span', { class: 'muted' }, parts`by ${(pr.proposer || {}).runnerId || '?'} · base `), short((pr.target || {}).baseVersionId)),
    el('p', {}, el('strong', { text: 'Reason: ' }), pr.reason || ''),
    pr.evidenceEventIds && pr.evidenceEventIds.length ? el('p', { class: 'muted' }, 'Evidence: ', pr.evidenceEventIds.map(e => [short(e), ' '])) : null,
    p.diff ? diffView(p.diff, 'Proposed change') : null);
  if (open && ctx.canWriteDocuments()) {
    const accept = el('button', { type: 'button', class: 'primary accept', text: 'Accept', disabled: p.state === 'stale' });
    const reject = el('button', { type: 'button', class: 'reject', text: 'Reject' });
    accept.addEventListener('click', () => decide(ctx, p.proposalEventId, 'accept'));
    reject.addEventListener('click', () => decide(ctx, p.proposalEventId, 'reject'));
    card.append(el('div', { class: 'row' }, accept, reject));
    if (p.state === 'stale') {
      const hint = el('p', { class: 'hint stale-hint', text: `Stale: the document's head is now ${String(p.headVersionId).slice(0, 12)}…, not this proposal's base. Request a new proposal; this one can only be rejected.` });
      hint.id = 'stale-' + p.proposalEventId.slice(0, 12);
      accept.setAttribute('aria-describedby', hint.id);
      card.append(hint);
    }
  }
  return card;
}

async function decide(ctx, proposalID, disposition) {
  try {
    const r = await write('decide:' + proposalID, { disposition }, id =>
      request('POST', `${base}/proposals/${enc(proposalID)}/decisions`, { json: { disposition, submissionId: id } }));
    if (r.unknown) return unknown(ctx, r, () => decide(ctx, proposalID, disposition));
    ctx.say('ok', `Recorded the decision: ${r.data.disposition} (submission ${r.id}).`);
    ctx.rerender();
  } catch (e) {
    ctx.say('error', describe(e));
    ctx.rerender();
  }
}

function versions(d) {
  return el('section', { 'aria-labelledby': 'versions-h' },
    el('h3', { id: 'versions-h', text: 'Versions' }),
    table([
      ['Version', v => short(v.versionId)],
      ['Reason', v => v.reason],
      ['When', v => v.occurredAt],
      ['Bytes', v => String(v.sizeBytes)],
    ], [...(d.versions || [])].reverse()));
}

function judgments(d) {
  const js = d.judgments || [];
  if (!js.length) return null;
  return el('section', { 'aria-labelledby': 'judgments-h' },
    el('h3', { id: 'judgments-h', text: 'Judgments' }),
    el('ul', { class: 'plain' }, js.map(j => el('li', {}, el('span', { class: 'badge', text: j.kind || '?' }), ' ', short(j.id || j.judgmentId || '')))));
}
