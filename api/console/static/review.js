// The Review destination: the pending proposals of every workbench a key reaches in an
// agent root (REST proposals), the OpenWOP pack proposals of the key's tenant (the
// facade's /proposals: a pack proposal is decided only there, since its workbench
// openwop-packs is written only through that surface), each with its diff, evidence,
// staleness and base, accept/reject for a key with the review scope, and the past
// decisions (REST judgments; applied and rejected pack proposals). Decisions carry a
// client id held in page state (api.write), reused after a network failure: REST's
// submission_id, the facade's Idempotency-Key (an apply or reject answers the same again).
//
// The facade acts only for the owner a key's credential binds (api/openwop doc.go): the
// session's openwop. A key bound to no tenant of this root (a key of whole agent roots)
// reads the pack proposals over REST, as Cairn proposals of openwop-packs, and gets no
// decision buttons for them: a REST decision there is refused, and deciding one outside
// the facade would skip apply's install judgment (api/openwop apply.go).
import { el, replace, short, diffView, lineDiff, link, outcomeUnknown, table, parts } from './dom.js';
import { request, write, wbPath, agentPath, filePath, describe, ApiError, allPages } from './api.js';
import { agentChooser } from './browse.js';
import { greater } from './semver.js';

const enc = encodeURIComponent;
// packsWorkbench holds a tenant's OpenWOP pack proposals (api/openwop).
const packsWorkbench = 'openwop-packs';
// maxWorkbenches bounds the workbenches one queue looks through (read a page at a time);
// the queue says so when a root has more.
const maxWorkbenches = 1000;
// maxPending bounds the pending proposals read per workbench (a page at a time); the
// queue says so when a workbench has more.
const maxPending = 1000;
// maxInlineDiffBytes bounds the proposed body whose diff the queue reads with the card:
// the diff comes with the whole body (include_body), so a larger one is read on request.
const maxInlineDiffBytes = 1 << 20;
// maxJudgments bounds the past decisions read per workbench (one page).
const maxJudgments = 100;
// openwop is what the facade's v2 routes need (api/openwop v2.go).
const openwop = { 'OpenWOP-Version': '2.0' };

export async function queue(ctx, agent) {
  const agents = ctx.agents();
  if (!agent && agents.length === 1) agent = agents[0];
  if (!agent) {
    replace(ctx.main, el('h2', { text: 'Review' }),
      agents.length ? el('ul', { class: 'plain' }, agents.map(a => el('li', {}, link(a, 'review', a)))) : null,
      ctx.session.principal.all_agents ? agentChooser(ctx, 'review', 'Review an agent root') : null);
    return;
  }
  // A key the facade serves as this agent root's tenant reaches its pack proposals there;
  // any other key may see the packs workbench over REST, read-only.
  const packsByFacade = !!ctx.session.openwop && ctx.session.openwop.tenant === agent;
  const wbs = await allPages(cursor => request('GET', `${agentPath(agent)}/workbenches?limit=100${after(cursor)}`, { signal: ctx.signal }),
    'workbenches', maxWorkbenches);
  const benches = wbs.items.filter(w => !(packsByFacade && w.workbench_id === packsWorkbench));
  const [pages, judged, packs] = await Promise.all([
    Promise.all(benches.map(w =>
      allPages(cursor => request('GET', `${wbPath(agent, w.workbench_id)}/proposals?state=pending&limit=100${after(cursor)}`, { signal: ctx.signal }),
        'proposals', maxPending)
        .then(r => ({ truncated: r.truncated, list: r.items.map(p => ({ ...p, workbench_id: w.workbench_id })) })))),
    Promise.all(benches.map(w =>
      request('GET', `${wbPath(agent, w.workbench_id)}/judgments?limit=${maxJudgments}`, { signal: ctx.signal })
        .then(r => ({ list: r.judgments || [], truncated: !!r.truncated })))),
    packsByFacade ? packProposals(ctx) : [],
  ]);
  const pending = pages.flatMap(p => p.list);
  const details = await Promise.all(pending.map(p => inlineDiff(p) ? proposalBody(ctx, agent, p) : p));
  const openPacks = packs.filter(p => p.state === 'draft' || p.state === 'revised');
  const [bases, owners, restBases] = await Promise.all([
    Promise.all(openPacks.map(p => installed(ctx, p))),
    openPacks.some(p => p.kind === agentPack) ? inventory(ctx) : null,
    Promise.all(details.map(d => d.workbench_id === packsWorkbench ? installedOverREST(ctx, agent, parsed(d.text)) : null)),
  ]);
  const n = details.length + openPacks.length;
  replace(ctx.main, el('h2', {}, 'Review queue of ', el('code', { text: agent })),
    el('p', { class: 'muted', text: `${n} pending proposals across ${benches.length} workbenches${packsByFacade ? ' and the OpenWOP packs' : ''}.` }),
    wbs.truncated ? el('p', { class: 'hint', id: 'queue-truncated', text: `Only the first ${maxWorkbenches} workbenches of this root were looked through.` }) : null,
    pages.filter(p => p.truncated).length ? el('p', { class: 'hint', text: `Only the first ${maxPending} pending proposals of a workbench are shown.` }) : null,
    ctx.can('review') ? (canDecide(ctx) ? null : el('p', { class: 'hint', text: 'This key has the review scope but not workspace:write: a decision writes the file, so it can read proposals, not decide them.' }))
      : el('p', { class: 'hint', text: 'This key has no review scope: it can read proposals, not decide them.' }),
    n ? [details.map((d, i) => card(ctx, agent, d, restBases[i])), openPacks.map((p, i) => packCard(ctx, p, bases[i], owners))]
      : el('p', { class: 'muted', text: 'Nothing to review.' }),
    judgments(judged, packs.filter(p => p.state === 'applied' || p.state === 'rejected')));
}

// card is a Cairn proposal; base, for one of the packs workbench (a pack proposal read
// over REST), is the installed pack its artifact would replace (null: none).
function card(ctx, agent, p, base) {
  const pack = p.workbench_id === packsWorkbench;
  // A pack proposal's staleness is apply's judgment (packStale), not its base generation:
  // a draft proposes its artifact at proposals/<request id>, and apply records it again
  // against the pack file packs/<name>; its diff is the manifest against that file's.
  const artifact = pack ? parsed(p.text) : null;
  const stale = pack ? packStale(p.kind, artifact, base, null) : (p.stale ? 'the file changed since this proposal\'s base' : null);
  const c = el('article', { class: 'card review', 'data-proposal': p.proposal_id, 'aria-label': 'Proposal ' + p.proposal_id },
    el('div', { class: 'row' }, el('span', { class: 'badge ' + (stale ? 'stale' : 'pending'), text: stale ? 'stale' : 'pending' }),
      el('span', { class: 'badge', text: pack ? 'OpenWOP pack' : 'Cairn' }), el('code', { text: `${p.workbench_id}/${p.path}` }), short(p.proposal_id)),
    el('p', { class: 'muted' }, parts`by ${p.proposer} · ${p.created_at} · `, pack ? baseLine(base)
      : `base generation ${p.base_generation}, head ${p.head_generation ?? 'none'}`),
    p.reason ? el('p', {}, el('strong', { text: 'Reason: ' }), p.reason) : null,
    (p.evidence || []).length ? el('details', {}, el('summary', { text: `Evidence (${p.evidence.length})` }),
      el('pre', { text: JSON.stringify(p.evidence, null, 2) })) : null,
    pack ? diffView(lineDiff(pretty(base), pretty(artifact)), `Proposed ${p.kind} against the installed one`)
      : p.diff ? diffView(p.diff, 'Proposed change to ' + p.path) : inlineDiff(p) ? null : diffOnRequest(ctx, agent, p));
  if (pack) {
    // Only the facade decides it, for the tenant the key is bound to (the module's note).
    const bound = ctx.session.openwop ? `the tenant ${ctx.session.openwop.tenant}` : 'no tenant';
    if (stale) c.append(el('p', { class: 'hint stale-hint', text: `Stale: ${stale}; applying it would be refused.` }));
    c.append(el('p', { class: 'hint pack-hint', text: 'An OpenWOP pack proposal is applied or rejected only through the OpenWOP facade, ' +
      `which acts for the tenant a key is bound to. This key is bound to ${bound}, so it can read this proposal but not decide it: ` +
      `use a key created with --tenant ${agent} --workspace W and the review scope.` }));
  } else if (canDecide(ctx)) {
    const accept = el('button', { type: 'button', class: 'primary accept', text: 'Accept', disabled: p.stale });
    const reject = el('button', { type: 'button', class: 'reject', text: 'Reject' });
    accept.addEventListener('click', () => decide(ctx, agent, p, 'accept'));
    reject.addEventListener('click', () => decide(ctx, agent, p, 'reject'));
    c.append(el('div', { class: 'row' }, accept, reject));
    if (p.stale) c.append(el('p', { class: 'hint stale-hint', text: 'Stale: the file changed since this proposal\'s base. Ask for a new proposal; this one can only be rejected.' }));
  }
  return c;
}

// canDecide says whether the key may decide a Cairn proposal: a decision writes the file,
// so REST needs workspace:write besides review (docs/workbench.md, cairn_decide).
function canDecide(ctx) { return ctx.can('review') && ctx.can('workspace:write'); }

const after = cursor => cursor ? '&cursor=' + enc(cursor) : '';

// inlineDiff says whether the queue reads a pending proposal's diff with its card: always
// for a pack proposal (its staleness reads its body), else when its body is small.
function inlineDiff(p) { return p.workbench_id === packsWorkbench || !(p.size_bytes > maxInlineDiffBytes); }

function proposalBody(ctx, agent, p) {
  return request('GET', `${wbPath(agent, p.workbench_id)}/proposals/${enc(p.proposal_id)}?include_body=true`, { signal: ctx.signal });
}

// diffOnRequest is the place of a large proposal's diff: a button reads it (with the body).
function diffOnRequest(ctx, agent, p) {
  const out = el('div', { class: 'diff-on-request' });
  const load = el('button', { type: 'button', class: 'load-diff', text: `Show the diff (the proposed body is ${p.size_bytes} bytes)` });
  load.addEventListener('click', async () => {
    load.disabled = true;
    try {
      const d = await proposalBody(ctx, agent, p);
      replace(out, d.diff ? diffView(d.diff, 'Proposed change to ' + p.path) : el('p', { class: 'muted', text: 'No diff.' }));
    } catch (e) {
      if (e && e.name === 'AbortError') return;
      load.disabled = false;
      out.append(el('p', { class: 'notice error', text: describe(e) }));
    }
  });
  out.append(load);
  return out;
}

async function decide(ctx, agent, p, disposition) {
  const path = `${wbPath(agent, p.workbench_id)}/proposals/${enc(p.proposal_id)}/decision`;
  try {
    const r = await write('review:' + p.proposal_id, { disposition }, id =>
      request('POST', path, { json: { disposition, submission_id: id } }));
    if (r.unknown) return outcomeUnknown(ctx, r.id, 'decision', () => decide(ctx, agent, p, disposition));
    ctx.say('ok', parts`Recorded the decision: ${disposition} of ${p.path} (submission ${r.id}).`);
    ctx.rerender();
  } catch (e) {
    ctx.say('error', describe(e));
    ctx.rerender();
  }
}

// packProposals lists the key's tenant's OpenWOP pack proposals (one page, every state).
async function packProposals(ctx) {
  const r = await request('GET', '/proposals?limit=100', { headers: openwop, signal: ctx.signal });
  return r.proposals || [];
}

// installed reads the installed pack a pack proposal would replace (its base): null when
// none is installed (or the node serves no readback).
async function installed(ctx, p) {
  const name = p.artifact && typeof p.artifact.name === 'string' ? p.artifact.name : '';
  if (!name) return null;
  try {
    return await request('GET', '/installed-packs/' + enc(name), { headers: openwop, signal: ctx.signal });
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

// installedOverREST reads the pack a proposal's artifact of the packs workbench (read
// over REST) would replace: the file packs/<name> (api/openwop proposal_record.go; null:
// none, or the artifact names no pack it could install).
async function installedOverREST(ctx, agent, artifact) {
  const name = artifact && typeof artifact.name === 'string' ? artifact.name : '';
  if (!name || /[/\\]/.test(name)) return null;
  try {
    return await request('GET', `${wbPath(agent, packsWorkbench)}/files/${filePath('packs/' + name)}`, { signal: ctx.signal });
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) return null; // none, or a name no file can have
    throw e;
  }
}

// inventory maps each agent id the key's tenant has installed (the facade's /agents, its
// packs' and the host's) to the pack that declares it.
async function inventory(ctx) {
  const r = await request('GET', '/agents', { headers: openwop, signal: ctx.signal });
  return new Map((r.agents || []).map(a => [a.agentId, a.packName]));
}

const agentPack = 'agent-pack';

// parsed is a proposal's body as JSON (null when it is not).
function parsed(text) {
  try { return typeof text === 'string' ? JSON.parse(text) : null; } catch { return null; }
}

// packStale says why the facade's apply would refuse a pack proposal of kind with
// artifact now, judged as apply judges it (api/openwop apply.go, inventory.judge) on what
// the key can read: the installed pack of the artifact's name (installed; null: none) and,
// when known, the agent inventory (agents: agent id → pack; null: not read). null: nothing
// read refuses it. A pack the host ships, or a pack file no proposal wrote, is read-only
// too, which readback does not tell: apply refuses it then, and the page shows the refusal.
function packStale(kind, artifact, installed, agents) {
  const a = artifact || {};
  if (installed && !greater(a.version, installed.version)) {
    return `the installed ${a.name ?? 'pack'} is at version ${installed.version ?? '?'}, and ${a.version ?? '?'} is not greater`;
  }
  if (kind === agentPack && agents) {
    for (const g of Array.isArray(a.agents) ? a.agents : []) {
      const owner = g && agents.get(g.agentId);
      if (owner && owner !== a.name) return `agent ${g.agentId} is already provided by pack ${owner}`;
    }
  }
  return null;
}

// baseLine says what a pack proposal is judged against: the installed version.
function baseLine(base) {
  return `base: ${base ? `installed version ${base.version ?? '?'}` : 'not installed'}`;
}

const pretty = v => v === null || v === undefined ? '' : JSON.stringify(v, null, 2) + '\n';

function packCard(ctx, p, base, agents) {
  const a = p.artifact || {};
  const prov = p.provenance || {};
  const stale = packStale(p.kind, a, base, agents);
  const c = el('article', { class: 'card review pack', 'data-pack': p.id, 'aria-label': 'OpenWOP pack proposal ' + p.id },
    el('div', { class: 'row' }, el('span', { class: 'badge ' + (stale ? 'stale' : 'pending'), text: stale ? 'stale' : p.state }),
      el('span', { class: 'badge', text: 'OpenWOP pack' }), el('code', { text: `${p.kind} ${a.name ?? '?'}@${a.version ?? '?'}` }), short(p.id)),
    el('p', { class: 'muted' }, parts`by ${(p.owner || {}).principal || '?'} · ${p.createdAt} · updated ${p.updatedAt} · ${baseLine(base)}`),
    p.title ? el('p', {}, el('strong', { text: 'Title: ' }), p.title) : null,
    p.rationale ? el('p', {}, el('strong', { text: 'Rationale: ' }), p.rationale) : null,
    (prov.sourceRunIds || []).length ? el('details', {}, el('summary', { text: `Evidence: source runs (${prov.sourceRunIds.length})` }),
      el('pre', { text: prov.sourceRunIds.join('\n') })) : null,
    diffView(lineDiff(pretty(base), pretty(p.artifact)), `Proposed ${p.kind} against the installed one`),
    el('p', { class: 'hint', text: 'Apply judges the manifest again against the tenant\'s installed packs: a version not greater than the installed one is refused, and nothing changes.' }));
  if (ctx.can('review')) {
    const accept = el('button', { type: 'button', class: 'primary accept', text: 'Apply', disabled: !!stale });
    const reject = el('button', { type: 'button', class: 'reject', text: 'Reject' });
    accept.addEventListener('click', () => decidePack(ctx, p, 'apply'));
    reject.addEventListener('click', () => decidePack(ctx, p, 'reject'));
    c.append(el('div', { class: 'row' }, accept, reject));
    if (stale) {
      c.append(el('p', { class: 'hint stale-hint', text: `Stale: ${stale}, so apply would refuse it. ` +
        'Ask for a revision with a greater version; this one can only be rejected.' }));
    }
  }
  return c;
}

// decidePack applies or rejects a pack proposal through the facade (POST
// /proposals/{id}:apply or :reject).
async function decidePack(ctx, p, action) {
  try {
    const r = await write('pack:' + p.id, { action }, id =>
      request('POST', `/proposals/${enc(p.id)}:${action}`, { headers: { ...openwop, 'Idempotency-Key': id } }));
    if (r.unknown) return outcomeUnknown(ctx, r.id, 'decision', () => decidePack(ctx, p, action));
    ctx.say('ok', `Recorded the decision: ${action} of the OpenWOP pack proposal ${p.id} (now ${r.data.state}).`);
    ctx.rerender();
  } catch (e) {
    ctx.say('error', describe(e));
    ctx.rerender();
  }
}

// judgments lists the past decisions: each workbench's judgments (REST), newest first,
// and the decided pack proposals.
function judgments(judged, packs) {
  const rows = judged.flatMap(j => j.list).sort((x, y) => (y.version ?? 0) - (x.version ?? 0));
  const truncated = judged.some(j => j.truncated);
  return el('section', { id: 'judgments', 'aria-labelledby': 'judgments-h' },
    el('h3', { id: 'judgments-h', text: 'Past decisions' }),
    rows.length ? table([
      ['Decision', j => el('span', { class: 'badge', text: j.disposition })],
      ['File', j => el('code', { text: `${j.workbench_id}/${j.path}` })],
      ['By', j => j.decided_by || parts`${j.principal} via ${j.surface}`],
      ['When', j => j.decided_at],
      ['Result', j => j.result_generation ? `generation ${j.result_generation}` : ''],
      ['Reason', j => j.reason || ''],
      ['Proposal', j => short(j.proposal_id)],
    ], rows, 'Judgments') : el('p', { class: 'muted', text: 'No decisions yet.' }),
    truncated ? el('p', { class: 'muted', text: `Only the first ${maxJudgments} decisions of a workbench are shown.` }) : null,
    packs.length ? table([
      ['Decision', p => el('span', { class: 'badge', text: p.state })],
      ['Pack', p => el('code', { text: `${p.kind} ${(p.artifact || {}).name ?? '?'}@${(p.artifact || {}).version ?? '?'}` })],
      ['When', p => p.updatedAt],
      ['Proposal', p => short(p.id)],
    ], packs, 'OpenWOP pack proposals decided') : null);
}
