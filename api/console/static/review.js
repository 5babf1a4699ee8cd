// The Review destination: the pending proposals of every workbench a key reaches in an
// agent root (REST proposals; an OpenWOP pack proposal is a chain of them in the
// workbench openwop-packs), each with its diff, evidence, staleness and base, and
// accept/reject for a key with the review scope. Decisions carry a client id held in
// page state (api.write), reused after a network failure.
import { el, replace, short, diffView, link, outcomeUnknown } from './dom.js';
import { request, write, wbPath, agentPath, describe } from './api.js';
import { agentChooser } from './browse.js';

const enc = encodeURIComponent;
// packsWorkbench holds a tenant's OpenWOP pack proposals (api/openwop).
const packsWorkbench = 'openwop-packs';
// maxWorkbenches bounds the workbenches one queue looks through (one listing page).
const maxWorkbenches = 100;

export async function queue(ctx, agent) {
  const agents = ctx.agents();
  if (!agent && agents.length === 1) agent = agents[0];
  if (!agent) {
    replace(ctx.main, el('h2', { text: 'Review' }),
      agents.length ? el('ul', { class: 'plain' }, agents.map(a => el('li', {}, link(a, 'review', a)))) : null,
      ctx.session.principal.all_agents ? agentChooser(ctx, 'review', 'Review an agent root') : null);
    return;
  }
  const wbs = await request('GET', `${agentPath(agent)}/workbenches?limit=${maxWorkbenches}`, { signal: ctx.signal });
  const pages = await Promise.all((wbs.workbenches || []).map(w =>
    request('GET', `${wbPath(agent, w.workbench_id)}/proposals?state=pending&limit=100`, { signal: ctx.signal })
      .then(r => (r.proposals || []).map(p => ({ ...p, workbench_id: w.workbench_id })))));
  const pending = pages.flat();
  const details = await Promise.all(pending.map(p =>
    request('GET', `${wbPath(agent, p.workbench_id)}/proposals/${enc(p.proposal_id)}?include_body=true`, { signal: ctx.signal })));
  replace(ctx.main, el('h2', {}, 'Review queue of ', el('code', { text: agent })),
    el('p', { class: 'muted', text: `${pending.length} pending proposals across ${(wbs.workbenches || []).length} workbenches.` }),
    ctx.can('review') ? null : el('p', { class: 'hint', text: 'This key has no review scope: it can read proposals, not decide them.' }),
    details.length ? details.map(d => card(ctx, agent, d)) : el('p', { class: 'muted', text: 'Nothing to review.' }));
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
  if (ctx.can('review')) {
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
