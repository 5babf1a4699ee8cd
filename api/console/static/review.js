// The Review destination: pending proposals across the workbenches a key reaches.
import { el, replace } from './dom.js';

export async function queue(ctx) {
  replace(ctx.main, el('h2', { text: 'Review' }), el('p', { class: 'muted', text: 'The review queue is not built yet; decide working-document proposals under Documents.' }));
}
