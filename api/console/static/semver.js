// SemVer 2.0 precedence (semver.org §11), as the OpenWOP facade's apply compares a pack
// proposal's version with the installed one (api/openwop apply.go versionGreater:
// golang.org/x/mod/semver after a "v", so "1" and "1.2" stand for 1.0.0 and 1.2.0, build
// metadata is ignored, numeric identifiers have any length).

const shape = /^(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:\.(0|[1-9]\d*))?(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$/;

// parse returns {core: [major, minor, patch] as digit strings, pre: [identifiers]}, or
// null when v is not a version x/mod/semver accepts.
function parse(v) {
  const m = typeof v === 'string' ? shape.exec(v) : null;
  if (!m) return null;
  const short = m[3] === undefined;
  if (short && (m[4] !== undefined || m[5] !== undefined)) return null; // shorthands take no suffix
  const pre = m[4] === undefined ? [] : m[4].split('.');
  if (pre.some(id => id === '' || /^0\d+$/.test(id))) return null;
  if (m[5] !== undefined && m[5].split('.').some(id => id === '')) return null;
  return { core: [m[1], m[2] ?? '0', m[3] ?? '0'], pre };
}

// numeric compares two digit strings without leading zeros, of any length.
const numeric = (a, b) => a.length !== b.length ? a.length - b.length : (a < b ? -1 : a > b ? 1 : 0);

function identifier(a, b) {
  const na = /^\d+$/.test(a), nb = /^\d+$/.test(b);
  if (na && nb) return numeric(a, b);
  if (na !== nb) return na ? -1 : 1; // numeric identifiers are lower
  return a < b ? -1 : a > b ? 1 : 0;
}

function compare(x, y) {
  for (let i = 0; i < 3; i++) {
    const c = numeric(x.core[i], y.core[i]);
    if (c) return c;
  }
  if (!x.pre.length || !y.pre.length) return y.pre.length - x.pre.length; // a pre-release is lower
  for (let i = 0; i < Math.min(x.pre.length, y.pre.length); i++) {
    const c = identifier(x.pre[i], y.pre[i]);
    if (c) return c;
  }
  return x.pre.length - y.pre.length;
}

// greater reports whether version a has higher precedence than version b; false when
// either is not a version (the facade never replaces a pack by one then).
export function greater(a, b) {
  const x = parse(a), y = parse(b);
  return !!x && !!y && compare(x, y) > 0;
}
