// DOM helpers. Every string from the server goes into the page as a text node
// (textContent); nothing here parses HTML (api/console/doc.go).

// bidiControls are the explicit directional formatting characters of Unicode's
// bidirectional algorithm (UAX #9): embeddings and overrides (U+202A–U+202E) and
// isolates (U+2066–U+2069). In a name, title or path they make the text display in an
// order other than the one it is stored in, so that one name can look like another.
const bidiControls = /[\u202A-\u202E\u2066-\u2069]/g;

// visible answers s with each explicit directional formatting character shown as a
// visible escape, ⟨U+202E⟩, instead of acting on the text around it.
export function visible(s) {
  return String(s).replace(bidiControls, c => `⟨U+${c.codePointAt(0).toString(16).toUpperCase()}⟩`);
}

// el creates an element: props sets attributes ("class", "text" as its textContent,
// "body" as its textContent verbatim, "on<event>" listeners, true for a boolean
// attribute); children are nodes or strings. Every string is server text until shown
// otherwise, so each is isolated: its direction cannot reach the text around it (an
// element's only text gets dir="auto", which isolates it; a string among other children
// becomes a <bdi> of its own), and its explicit directional formatting characters are
// shown (visible). "body" is the text of a file or document, shown as written, for a
// block of its own (a <pre>, whose every line ends every direction in it), where the
// characters are part of the text (Arabic or Hebrew prose uses them). A Text node child
// (parts) is the page's own text, appended as is.
export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = visible(v);
    else if (k === 'body') e.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, String(v));
  }
  const kids = children.flat(Infinity).filter(c => c !== null && c !== undefined && c !== false && c !== '');
  if (props && props.text !== undefined || kids.length === 1 && !(kids[0] instanceof Node)) {
    if (!e.hasAttribute('dir')) e.dir = 'auto';
  }
  for (const c of kids) {
    if (c instanceof Node) e.append(c);
    else if (kids.length === 1) e.append(visible(c));
    else e.append(el('bdi', { text: c }));
  }
  return e;
}

// parts is a tagged template for a line mixing the page's text with server text: its
// literals become Text nodes (the page's own), each value a string that el isolates
// and escapes as a child of its own. el('p', {}, parts`by ${name} · ${when}`).
export function parts(strings, ...values) {
  const out = [];
  strings.forEach((s, i) => {
    if (s) out.push(document.createTextNode(s));
    if (i < values.length) out.push(String(values[i] ?? ''));
  });
  return out;
}

// replace empties parent and appends children.
export function replace(parent, ...children) {
  parent.replaceChildren();
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined && c !== false) parent.append(c);
  }
}

// short abbreviates a long id for display (the whole id is its title).
export function short(id) {
  if (typeof id !== 'string') return el('code', { text: String(id ?? '') });
  return el('code', { title: id, text: id.length > 16 ? id.slice(0, 12) + '…' : id });
}

// notice is a message box; kind is error, unknown or ok; text is a string or parts.
export function notice(kind, text, ...actions) {
  return el('div', { class: 'notice ' + kind, role: kind === 'error' ? 'alert' : 'status' }, el('span', {}, text), ' ', actions);
}

const prefix = { insert: '+', delete: '-', context: ' ' };
const klass = { insert: 'ins', delete: 'del', context: 'ctx' };

// diffView renders a diff answer (workbench/diff: hunks of {op, text} lines, or a summary
// of a side that is not text) as escaped text lines in a <pre>.
export function diffView(d, label = 'Diff') {
  if (!d) return el('p', { class: 'muted', text: 'No diff.' });
  if (d.identical) return el('p', { class: 'muted', text: 'The two sides are identical.' });
  if (d.text === false) {
    return el('p', { class: 'muted', text: `Not text: ${d.reason || 'binary or too large'} (${fmtSide(d.from || d.old)} → ${fmtSide(d.to || d.new)})` });
  }
  // A diff is what a reviewer decides on: its lines show their directional formatting
  // characters (the node's diffs escape them as \u{202e}, workbench/diff/escape.go; a
  // diff the page builds, lineDiff, shows them as visible does), each line a block of
  // its own.
  const pre = el('pre', { class: 'diff', 'aria-label': label, tabindex: '0' });
  for (const h of d.hunks || []) {
    pre.append(el('span', { class: 'hunk', text: `@@ -${h.old_start},${h.old_lines} +${h.new_start},${h.new_lines} @@` }));
    for (const l of h.lines || []) {
      pre.append(el('span', { class: klass[l.op] || 'ctx', body: (prefix[l.op] ?? '?') + visible(l.text) }));
    }
  }
  const summary = el('p', { class: 'muted', text: `${d.lines_inserted ?? 0} lines inserted, ${d.lines_deleted ?? 0} deleted${d.truncated ? ' (truncated)' : ''}${d.approximate ? ' (approximate)' : ''}` });
  return el('div', {}, summary, pre);
}

function fmtSide(s) {
  if (!s) return '?';
  return `${s.size_bytes ?? '?'} bytes ${s.digest_uri ?? ''}`;
}

// table renders rows as a table; cols are [header, row => cell].
export function table(cols, rows, caption) {
  return el('table', {},
    caption ? el('caption', { class: 'muted', text: caption }) : null,
    el('thead', {}, el('tr', {}, cols.map(([h]) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows.map(r => el('tr', {}, cols.map(([, f]) => el('td', {}, f(r)))))));
}

// link is an anchor to a console route (hash).
export function link(text, ...route) {
  return el('a', { href: '#/' + route.map(encodeURIComponent).join('/'), text });
}

// outcomeUnknown says a write got no answer, so its outcome is unknown, reloads the view
// (ctx.rerender), and offers retry, which sends the same write with the same client id.
export function outcomeUnknown(ctx, id, what, retry) {
  ctx.show(notice('unknown', `Outcome unknown: no answer came for this ${what} (client id ${id}). ` +
    'The view was reloaded and may already show it. Retry sends the same write with the same id; the node applies it at most once.',
  el('button', { type: 'button', id: 'retry-write', onclick: retry, text: 'Retry with the same id' })));
  return ctx.rerender();
}

// maxLineDiffCells bounds lineDiff's table (old lines × new lines); past it the diff is
// every old line deleted and every new line inserted.
const maxLineDiffCells = 1 << 20;

// lineDiff compares two texts line by line (a longest common subsequence) and answers
// the shape diffView renders: one hunk of every line. For small texts the page builds
// itself (an OpenWOP pack's manifest against the installed one); file diffs come from
// the node.
export function lineDiff(oldText, newText) {
  const a = oldText === '' ? [] : oldText.replace(/\n$/, '').split('\n');
  const b = newText === '' ? [] : newText.replace(/\n$/, '').split('\n');
  const lines = [];
  if (a.length * b.length > maxLineDiffCells) {
    for (const t of a) lines.push({ op: 'delete', text: t });
    for (const t of b) lines.push({ op: 'insert', text: t });
  } else {
    const w = b.length + 1;
    const n = new Uint32Array((a.length + 1) * w); // n[i*w+j]: LCS of a[i:], b[j:]
    for (let i = a.length - 1; i >= 0; i--) {
      for (let j = b.length - 1; j >= 0; j--) {
        n[i * w + j] = a[i] === b[j] ? n[(i + 1) * w + j + 1] + 1 : Math.max(n[(i + 1) * w + j], n[i * w + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) { lines.push({ op: 'context', text: a[i] }); i++; j++; }
      else if (j < b.length && (i === a.length || n[i * w + j + 1] >= n[(i + 1) * w + j])) { lines.push({ op: 'insert', text: b[j] }); j++; }
      else { lines.push({ op: 'delete', text: a[i] }); i++; }
    }
  }
  const ins = lines.filter(l => l.op === 'insert').length;
  const del = lines.filter(l => l.op === 'delete').length;
  if (!ins && !del) return { identical: true };
  return { lines_inserted: ins, lines_deleted: del,
    hunks: [{ old_start: a.length ? 1 : 0, old_lines: a.length, new_start: b.length ? 1 : 0, new_lines: b.length, lines }] };
}
