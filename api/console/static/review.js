// The Review destination: the pending proposals of every workbench a key reaches in an
// agent root (REST proposals), the OpenWOP pack proposals of the key's tenant (the
// facade's /proposals: a pack proposal is decided only there, since its workbench
// openwop-packs is written only through that surface), each with its diff, evidence,
// staleness and base, accept/reject for a key with the review scope, and the past
// decisions (REST judgments; applied and rejected pack proposals). Decisions carry a
// client id held in page state (api.write), reused after a network failure: REST's
// submission_id, the facade's Idempotency-Key (an apply or reject answers the same again).
import { el, replace, short, diffView, lineDiff, link, outcomeUnknown, table } from './dom.js';
import { request, write, wbPath, agentPath, describe, ApiError } from './api.js';
import { agentChooser } from './browse.js';

const enc = encodeURIComponent;
// packsWorkbench holds a tenant's OpenWOP pack proposals (api/openwop).
const packsWorkbench = 'openwop-packs';
// maxWorkbenches bounds the workbenches one queue looks through (one listing page).
const maxWorkbenches = 100;
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
  // A key bound to this agent root as its OpenWOP tenant reaches its pack proposals
  // through the facade; any other key may see the packs workbench over REST, read-only.
  const packsByFacade = ctx.session.principal.tenant === agent;
  const wbs = await request('GET', `${agentPath(agent)}/workbenches?limit=${maxWorkbenches}`, { signal: ctx.signal });
  const benches = (wbs.workbenches || []).filter(w => !(packsByFacade && w.workbench_id === packsWorkbench));
  const [pages, judged, packs] = await Promise.all([
    Promise.all(benches.map(w =>
      request('GET', `${wbPath(agent, w.workbench_id)}/proposals?state=pending&limit=100`, { signal: ctx.signal })
        .then(r => (r.proposals || []).map(p => ({ ...p, workbench_id: w.workbench_id }))))),
    Promise.all(benches.map(w =>
      request('GET', `${wbPath(agent, w.workbench_id)}/judgments?limit=${maxJudgments}`, { signal: ctx.signal })
        .then(r => ({ list: r.judgments || [], truncated: !!r.truncated })))),
    packsByFacade ? packProposals(ctx) : [],
  ]);
  const pending = pages.flat();
  const details = await Promise.all(pending.map(p =>
    request('GET', `${wbPath(agent, p.workbench_id)}/proposals/${enc(p.proposal_id)}?include_body=true`, { signal: ctx.signal })));
  const openPacks = packs.filter(p => p.state === 'draft' || p.state === 'revised');
  const bases = await Promise.all(openPacks.map(p => installed(ctx, p)));
  const n = details.length + openPacks.length;
  replace(ctx.main, el('h2', {}, 'Review queue of ', el('code', { text: agent })),
    el('p', { class: 'muted', text: `${n} pending proposals across ${benches.length} workbenches${packsByFacade ? ' and the OpenWOP packs' : ''}.` }),
    ctx.can('review') ? null : el('p', { class: 'hint', text: 'This key has no review scope: it can read proposals, not decide them.' }),
    n ? [details.map(d => card(ctx, agent, d)), openPacks.map((p, i) => packCard(ctx, p, bases[i]))]
      : el('p', { class: 'muted', text: 'Nothing to review.' }),
    judgments(judged, packs.filter(p => p.state === 'applied' || p.state === 'rejected')));
}

function card(ctx, agent, p) {
  const pack = p.workbench_id === packsWorkbench;
  const c = el('article', { class: 'card review', 'data-proposal': p.proposal_id, 'aria-label': 'Proposal ' + p.proposal_id },
    el('div', { class: 'row' }, el('span', { class: 'badge ' + (p.stale ? 'stale' : 'pending'), text: p.stale ? 'stale' : 'pending' }),
      el('span', { class: 'badge', text: pack ? 'OpenWOP pack' : 'Cairn' }), el('code', { text: `${p.workbench_id}/${p.path}` }), short(p.proposal_id)),
    el('p', { class: 'muted', text: `by ${p.proposer} · ${p.created_at} · base generation ${p.base_generation}, head ${p.head_generation ?? 'none'}` }),
    p.reason ? el('p', {}, el('strong', { text: 'Reason: ' }), p.reason) : null,
    (p.evidence || []).length ? el('details', {}, el('summary', { text: `Evidence (${p.evidence.length})` }),
      el('pre', { text: JSON.stringify(p.evidence, null, 2) })) : null,
    p.diff ? diffView(p.diff, 'Proposed change to ' + p.path) : null);
  if (pack) {
    // Only the facade writes the packs workbench: a decision here would be refused.
    c.append(el('p', { class: 'hint', text: 'An OpenWOP pack proposal is applied or rejected through the OpenWOP facade, by a key bound to this agent root as its tenant; this key is not one.' }));
  } else if (ctx.can('review')) {
    const accept = el('button', { type: 'button', class: 'primary accept', text: 'Accept', disabled: p.stale });
    const reject = el('button', { type: 'button', class: 'reject', text: 'Reject' });
    accept.addEventListener('click', () => decide(ctx, agent, p, 'accept'));
    reject.addEventListener('click', () => decide(ctx, agent, p, 'reject'));
    c.append(el('div', { class: 'row' }, accept, reject));
    if (p.stale) c.append(el('p', { class: 'hint stale-hint', text: 'Stale: the file changed since this proposal\'s base. Ask for a new proposal; this one can only be rejected.' }));
  }
  return c;
}

async function decide(ctx, agent, p, disposition) {
  const path = `${wbPath(agent, p.workbench_id)}/proposals/${enc(p.proposal_id)}/decision`;
  try {
    const r = await write('review:' + p.proposal_id, { disposition }, id =>
      request('POST', path, { json: { disposition, submission_id: id } }));
    if (r.unknown) return outcomeUnknown(ctx, r.id, 'decision', () => decide(ctx, agent, p, disposition));
    ctx.say('ok', `Recorded the decision: ${disposition} of ${p.path} (submission ${r.id}).`);
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

const pretty = v => v === null || v === undefined ? '' : JSON.stringify(v, null, 2) + '\n';

function packCard(ctx, p, base) {
  const a = p.artifact || {};
  const prov = p.provenance || {};
  const c = el('article', { class: 'card review pack', 'data-pack': p.id, 'aria-label': 'OpenWOP pack proposal ' + p.id },
    el('div', { class: 'row' }, el('span', { class: 'badge pending', text: p.state }), el('span', { class: 'badge', text: 'OpenWOP pack' }),
      el('code', { text: `${p.kind} ${a.name ?? '?'}@${a.version ?? '?'}` }), short(p.id)),
    el('p', { class: 'muted', text: `by ${(p.owner || {}).principal || '?'} · ${p.createdAt} · updated ${p.updatedAt} · base: ${base ? `installed version ${base.version ?? '?'}` : 'not installed'}` }),
    p.title ? el('p', {}, el('strong', { text: 'Title: ' }), p.title) : null,
    p.rationale ? el('p', {}, el('strong', { text: 'Rationale: ' }), p.rationale) : null,
    (prov.sourceRunIds || []).length ? el('details', {}, el('summary', { text: `Evidence: source runs (${prov.sourceRunIds.length})` }),
      el('pre', { text: prov.sourceRunIds.join('\n') })) : null,
    diffView(lineDiff(pretty(base), pretty(p.artifact)), `Proposed ${p.kind} against the installed one`),
    el('p', { class: 'hint', text: 'Apply judges the manifest again against the tenant\'s installed packs: a version not greater than the installed one is refused, and nothing changes.' }));
  if (ctx.can('review')) {
    const accept = el('button', { type: 'button', class: 'primary accept', text: 'Apply' });
    const reject = el('button', { type: 'button', class: 'reject', text: 'Reject' });
    accept.addEventListener('click', () => decidePack(ctx, p, 'apply'));
    reject.addEventListener('click', () => decidePack(ctx, p, 'reject'));
    c.append(el('div', { class: 'row' }, accept, reject));
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
      ['By', j => `${j.decided_by} via ${j.surface}`],
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
