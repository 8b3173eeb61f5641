// A test double of the client's viewports over an array held in the page: client.viewport and
// client.aggregate as docs/protocol.md (The browser client and the dashboard) gives them, with
// the part of the filter language the dashboard writes. For the dashboard's layout and wiring
// only: what the server does is tested against the server.

const WORD = /^(AND|OR|NOT|BETWEEN|LIKE|IS|NULL|TRUE|FALSE|IN)$/i;

function tokens(text) {
  const out = [];
  const re = /\s*(\[\/[^\]]*\]|\/[A-Za-z_][\w/]*|-?\d+(?:\.\d+)?(?:E[+-]?\d+)?|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|<=|>=|!=|<>|==|[=<>(),*]|[A-Za-z_]+)/iy;
  let match;
  while (re.lastIndex < text.length && (match = re.exec(text))) out.push(match[1]);
  if (re.lastIndex < text.trimEnd().length) throw new Error(`bad filter: at column ${re.lastIndex + 1}`);
  return out;
}

function field(record, token) {
  const name = token.startsWith("[") ? token.slice(2, -1) : token.slice(1);
  const value = record?.[name];
  return value === "" ? null : value;
}

/** A filter as a function of a record. */
export function compile(text) {
  if (!text || !text.trim()) return () => true;
  const list = tokens(text);
  let at = 0;
  const peek = () => list[at];
  const take = () => list[at++];
  const is = (word) => typeof peek() === "string" && peek().toUpperCase() === word;
  const operand = () => {
    const token = take();
    if (token === undefined) throw new Error(`bad filter: expected an operand at the end`);
    if (token === "(") {
      const inner = or();
      take();
      return inner;
    }
    if (token.startsWith("/") || token.startsWith("[")) return (r) => field(r, token);
    if (token.startsWith("'") || token.startsWith('"')) {
      const value = token.slice(1, -1).replace(/\\(.)/g, "$1");
      return () => value;
    }
    if (/^NULL$/i.test(token)) return () => null;
    if (/^TRUE$/i.test(token)) return () => true;
    if (/^FALSE$/i.test(token)) return () => false;
    const number = Number(token);
    if (!Number.isNaN(number)) return () => number;
    throw new Error(`bad filter: unexpected ${token}`);
  };
  const comparison = () => {
    const left = operand();
    let negate = false;
    if (is("NOT")) { take(); negate = true; }
    if (is("IS")) {
      take();
      const not = is("NOT") ? (take(), true) : false;
      take(); // NULL
      return (r) => { const v = left(r); return (v === null || v === undefined) !== not; };
    }
    if (is("BETWEEN")) {
      take();
      const low = operand();
      take(); // AND
      const high = operand();
      return (r) => { const v = left(r); return v !== null && v !== undefined && (v >= low(r) && v <= high(r)) !== negate; };
    }
    if (is("LIKE")) {
      take();
      const pattern = operand()();
      const flags = pattern.startsWith("(?i)") ? "i" : "";
      const re = new RegExp(flags ? pattern.slice(4) : pattern, flags);
      return (r) => { const v = left(r); return v !== null && v !== undefined && re.test(String(v)) !== negate; };
    }
    const op = peek();
    if (["=", "==", "!=", "<>", "<", "<=", ">", ">="].includes(op)) {
      take();
      const right = operand();
      return (r) => {
        let [a, b] = [left(r), right(r)];
        if (a === null || a === undefined || b === null || b === undefined) return false;
        if (typeof a === "number" && typeof b === "string" && b !== "" && !Number.isNaN(Number(b))) b = Number(b);
        if (typeof b === "number" && typeof a === "string" && a !== "" && !Number.isNaN(Number(a))) a = Number(a);
        switch (op) {
          case "=": case "==": return a === b;
          case "!=": case "<>": return a !== b;
          case "<": return a < b;
          case "<=": return a <= b;
          case ">": return a > b;
          default: return a >= b;
        }
      };
    }
    return (r) => left(r) === true;
  };
  const not = () => {
    if (is("NOT")) { take(); const inner = not(); return (r) => !inner(r); }
    return comparison();
  };
  const and = () => {
    let left = not();
    while (is("AND")) { take(); const l = left, right = not(); left = (r) => l(r) && right(r); }
    return left;
  };
  const or = () => {
    let left = and();
    while (is("OR")) { take(); const l = left, right = and(); left = (r) => l(r) || right(r); }
    return left;
  };
  const result = or();
  if (at !== list.length) throw new Error(`bad filter: unexpected ${peek()}`);
  void WORD;
  return result;
}

/** The server's order: numbers before strings, NULLs last, ties by key. */
function comparator(orderby) {
  const parts = (orderby || "").split(",").map((p) => p.trim()).filter(Boolean).map((p) => {
    const [path, dir] = p.split(/\s+/);
    return { name: path.replace(/^\[?\//, "").replace(/]$/, ""), desc: /^desc$/i.test(dir ?? "") };
  });
  return (a, b) => {
    for (const { name, desc } of parts) {
      const [x, y] = [a.record[name], b.record[name]];
      const nx = x === null || x === undefined || x === "";
      const ny = y === null || y === undefined || y === "";
      if (nx || ny) { if (nx !== ny) return nx ? 1 : -1; continue; }
      let c = 0;
      if (typeof x === "number" && typeof y === "number") c = x - y;
      else if (typeof x === "number") c = -1;
      else if (typeof y === "number") c = 1;
      else c = String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
      if (c !== 0) return desc ? -c : c;
    }
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  };
}

class Emitter {
  constructor() { this.listeners = new Map(); }
  on(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(fn);
    return () => this.listeners.get(name).delete(fn);
  }
  emit(name, event) { for (const fn of this.listeners.get(name) ?? []) fn(event); }
}

/** A view over the store: records (or groups), filtered, sorted, windowed. */
class FakeView extends Emitter {
  constructor(store, settings, source) {
    super();
    this.store = store;
    this.settings = { ...settings };
    this.source = source; // () => [{ key, record }] of what the view ranges over (before filter)
    this.rows = [];
    this.keys = [];
    this.count = null;
    this.closed = false;
    this.stale = false;
    [this.first, this.last] = settings.rows ?? [0, 99];
    this.moves = 0;
    this.ready = this.apply();
    store.views.add(this);
  }

  /** The whole view, sorted; computed again only when the records, filter or order changed. */
  compute() {
    const stamp = `${this.store.version}|${this.settings.filter}|${this.settings.orderby}`;
    if (this.cached?.stamp !== stamp) {
      const test = compile(this.settings.filter);
      this.cached = { stamp, all: this.source(test).sort(comparator(this.settings.orderby)) };
    }
    return this.cached.all;
  }

  async apply() {
    await new Promise((resolve) => setTimeout(resolve, this.store.latencyMs));
    if (this.closed) return;
    let all;
    try {
      all = this.compute();
    } catch (error) {
      this.error = String(error.message);
      this.emit("error", { reason: this.error });
      throw error;
    }
    const window = all.slice(this.first, this.last + 1);
    const rows = window.map((entry) => entry.record);
    const keys = window.map((entry) => entry.key);
    const changed = this.count !== all.length || rows.length !== this.rows.length
      || rows.some((record, i) => record !== this.rows[i] || keys[i] !== this.keys[i]);
    this.rows = rows;
    this.keys = keys;
    this.count = all.length;
    this.last = this.first + rows.length - 1;
    if (changed) this.emit("rows", { first: this.first, last: this.last, rows, keys, count: this.count });
  }

  get filter() { return this.settings.filter || undefined; }

  get orderby() { return this.settings.orderby || undefined; }

  moveTo(first, last) {
    this.moves += 1;
    this.store.moves.push([this.settings.filter ?? "", first, last]);
    [this.first, this.last] = [first, last];
    return this.apply();
  }

  sortBy(orderby) {
    this.settings.orderby = orderby;
    return this.apply();
  }

  filterBy(filter) {
    this.settings.filter = filter;
    return this.apply();
  }

  close() {
    this.closed = true;
    this.store.views.delete(this);
  }
}

function parseProjection(item) {
  const match = item.match(/^\s*(SUM|COUNT|AVG|MIN|MAX)\((.*)\)\s+AS\s+(\S+)\s*$/i);
  const name = (p) => p.trim().replace(/^\[?\//, "").replace(/]$/, "");
  if (!match) return { out: name(item), fn: null, arg: name(item) };
  return { out: name(match[3]), fn: match[1].toUpperCase(), arg: name(match[2]) };
}

/** The records of a topic in the page, and views of them. */
export class FakeStore {
  constructor(records, keyField) {
    this.keyField = keyField;
    this.records = new Map(records.map((r) => [this.keyOf(r), r]));
    this.views = new Set();
    this.moves = [];
    this.latencyMs = 5;
    this.opened = [];
    this.version = 0;
  }

  /** A record's key, in the records' natural order. */
  keyOf(record) {
    const value = record[this.keyField];
    return typeof value === "number" ? String(value).padStart(12, "0") : String(value);
  }

  viewport(topic, { filter, orderby, rows, options } = {}) {
    this.opened.push({ kind: "viewport", topic, filter, orderby, rows, options });
    return new FakeView(this, { filter, orderby, rows }, (test) => {
      const out = [];
      for (const [key, record] of this.records) if (test(record)) out.push({ key, record });
      return out;
    });
  }

  aggregate(topic, { filter, grouping, projection, orderby, rows, options } = {}) {
    this.opened.push({ kind: "aggregate", topic, filter, grouping, projection, orderby, rows, options });
    const by = grouping.map((g) => g.replace(/^\[?\//, "").replace(/]$/, ""));
    const items = projection.map(parseProjection);
    const cache = new Map(); // group key -> group record, reused while unchanged (a stable identity)
    const view = new FakeView(this, { filter, orderby, rows }, (test) => {
      const groups = new Map();
      for (const record of this.records.values()) {
        if (!test(record)) continue;
        const key = JSON.stringify(by.map((f) => record[f] ?? null));
        let group = groups.get(key);
        if (!group) groups.set(key, (group = []));
        group.push(record);
      }
      const out = [];
      for (const [key, members] of groups) {
        const record = {};
        for (const { out: name, fn, arg } of items) {
          const values = members.map((m) => m[arg]).filter((v) => v !== null && v !== undefined && v !== "");
          if (fn === null) record[name] = members[0][arg];
          else if (fn === "COUNT") record[name] = values.length;
          else if (values.length === 0) record[name] = null;
          else if (fn === "SUM") record[name] = values.reduce((a, b) => a + b, 0);
          else if (fn === "AVG") record[name] = values.reduce((a, b) => a + b, 0) / values.length;
          else if (fn === "MIN") record[name] = Math.min(...values);
          else record[name] = Math.max(...values);
        }
        const before = cache.get(key);
        const same = before && JSON.stringify(before) === JSON.stringify(record);
        if (!same) cache.set(key, record);
        out.push({ key: `g${key}`, record: same ? before : record });
      }
      return out;
    });
    return view;
  }

  /** A one-off query: the first `topN` matching records, in key order. */
  async sow({ filter, topN } = {}) {
    await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    const test = compile(filter);
    const out = [];
    for (const record of this.records.values()) {
      if (topN !== undefined && out.length >= topN) break;
      if (test(record)) out.push(record);
    }
    return out;
  }

  /** A publish: every view follows, as the server's would. */
  publish(...records) {
    for (const record of records) this.records.set(this.keyOf(record), record);
    this.version += 1;
    return Promise.all([...this.views].map((view) => view.apply()));
  }

  setStale(stale) {
    for (const view of this.views) {
      view.stale = stale;
      view.emit("stale", { stale });
    }
  }
}
