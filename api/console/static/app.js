// The console's entry point: the tab's key, who it is (GET /ui/session), and the hash
// router over the destinations (api/console/doc.go).
import { el, replace, notice, parts } from './dom.js';
import { request, getKey, setKey, ApiError, describe } from './api.js';
import * as documents from './documents.js';
import * as browse from './browse.js';
import * as feed from './feed.js';
import * as review from './review.js';

const main = document.getElementById('main');
const status = document.getElementById('status');
const keyForm = document.getElementById('key-form');
const keyInput = document.getElementById('key-input');
const who = document.getElementById('who');

let session = null;
let current = null; // the AbortController of the view on screen

const routes = {
  documents: (ctx, id) => id ? documents.detail(ctx, id) : documents.list(ctx),
  review: (ctx, agent) => review.queue(ctx, agent),
  browse: (ctx, ...rest) => browse.route(ctx, ...rest),
  feed: (ctx, agent) => feed.view(ctx, agent),
};

// hashParts is the route of the hash, each segment decoded; null when one is not a valid
// escape (a hand-edited or cut link).
function hashParts() {
  const h = location.hash.replace(/^#\/?/, '');
  try {
    return h ? h.split('/').map(decodeURIComponent) : ['documents'];
  } catch {
    return null;
  }
}

// context is what a view gets: the session, where to draw, and helpers.
function context(signal) {
  const scopes = new Set(session.principal.scopes || []);
  return {
    session, main, signal,
    can: scope => scopes.has(scope),
    // Writes of working documents need workspace:write and review (docs/documents.md).
    canWriteDocuments: () => !!session.documents && scopes.has('workspace:write') && scopes.has('review'),
    agents: () => {
      const a = [...(session.principal.agents || [])];
      if (session.principal.tenant && !a.includes(session.principal.tenant)) a.push(session.principal.tenant);
      return a;
    },
    say: (kind, text) => replace(status, text ? notice(kind, text) : null),
    show: node => replace(status, node),
    rerender: () => render(),
  };
}

async function render() {
  if (current) current.abort();
  current = new AbortController();
  const route = hashParts();
  if (!route) {
    replace(main, el('p', { text: 'No such page: the link is not a valid console address.' }));
    return;
  }
  const [dest, ...args] = route;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.nav === dest) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  if (!session) return;
  const view = routes[dest];
  if (!view) {
    replace(main, el('p', { text: 'No such page.' }));
    return;
  }
  const ctx = context(current.signal);
  try {
    await view(ctx, ...args);
  } catch (e) {
    if (e && e.name === 'AbortError') return;
    replace(main, notice('error', describe(e)));
    if (e instanceof ApiError && e.status === 401) recheck();
  }
}

// recheck asks the node again who the key is after a view was refused it (401): a key
// that stopped working (revoked, expired) brings the key form back.
async function recheck() {
  try {
    await request('GET', '/ui/session');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) start();
  }
}

async function start() {
  try {
    session = await request('GET', '/ui/session');
  } catch (e) {
    session = null;
    keyForm.hidden = false;
    replace(who, '');
    replace(main, notice('error', e instanceof ApiError && e.status === 401
      ? (getKey() ? 'The node refused this key. Enter another.' : 'This node needs an API key.')
      : describe(e)));
    keyInput.focus();
    return;
  }
  keyForm.hidden = true;
  const p = session.principal;
  replace(who, el('span', {}, parts`${p.name || p.id} · ${p.scopes.join(', ') || 'no scopes'}`), ' ',
    el('button', { type: 'button', id: 'forget-key', onclick: forget, text: 'Forget key' }));
  render();
}

// forget leaves the browser as if no key had been used in it: the tab's key and every
// unsaved draft of working documents, whoever's they are (localStorage outlives the tab,
// so on a shared browser the next person could read them); it asks first when there are
// drafts, since they are lost.
function forget() {
  const drafts = documents.draftKeys();
  const n = drafts.length;
  if (n && !confirm(`Forget the key and discard ${n} unsaved draft${n === 1 ? '' : 's'} of working documents kept in this browser? They are lost.`)) return;
  for (const k of drafts) localStorage.removeItem(k);
  setKey('');
  location.reload();
}

keyForm.addEventListener('submit', ev => {
  ev.preventDefault();
  setKey(keyInput.value.trim());
  keyInput.value = '';
  start();
});
window.addEventListener('hashchange', () => { replace(status); render(); main.focus(); });
start();
