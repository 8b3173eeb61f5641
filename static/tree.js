// The rows a grid shows, as a tree of server views (docs/protocol.md, Viewports and Aggregated
// views). Without grouping: one viewport over the records, moved to the rows on screen. With
// grouping: an aggregated view of the first level's groups; under each expanded group, a view of
// the next level's groups filtered to it, or at the last level a viewport of its records filtered
// to it. A group row carries its totals (the aggregates of the projection). Only the rows on
// screen, plus a margin, are asked for; a level's groups are held whole, up to GROUP_LIMIT.

/** Groups held per level (the server's largest window). */
export const GROUP_LIMIT = 10_000;
/** Rows asked for beyond the screen, above and below. */
export const MARGIN = 40;

/** A field's path in the filter language: `/qty`, or `[/odd name]`. @param {string} field */
export function path(field) {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(field) ? `/${field}` : `[/${field.replace(/]/g, "")}]`;
}

/** A value as a filter-language literal. @param {unknown} value */
export function literal(value) {
  if (typeof value === "number") return String(value);
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  return `'${String(value).replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** The filter that holds exactly one group's records. @param {string} field @param {unknown} value */
export function equals(field, value) {
  return value === null || value === undefined || value === "" ? `${path(field)} IS NULL` : `${path(field)} = ${literal(value)}`;
}

/** Filters joined with AND, each in parentheses; empty ones left out. @param {string[]} filters */
export function both(...filters) {
  const parts = filters.filter((filter) => filter && filter.trim() !== "");
  return parts.length <= 1 ? (parts[0] ?? "") : parts.map((part) => `(${part})`).join(" AND ");
}

/**
 * One server view in the tree: the root, or the rows under an expanded group.
 * `values` are the group values that lead here (one per level above).
 */
class Node {
  /** @param {RowTree} tree @param {unknown[]} values */
  constructor(tree, values) {
    this.tree = tree;
    this.values = values;
    this.depth = values.length;
    /** records, or (above the last level) groups */
    this.grouped = this.depth < tree.grouping.length;
    /** @type {Map<string, Node>} expanded groups, by their values' JSON */
    this.children = new Map();
    this.view = this.open();
    this.appliedFilter = tree.filter;
    this.appliedOrder = this.orderby() ?? "";
    this.view.on("rows", () => tree.changed());
    this.view.on("change", (/** @type {any} */ change) => tree.noted(this, change));
    this.view.on("error", (/** @type {any} */ event) => tree.failed(this, event));
    this.view.on("stale", (/** @type {any} */ event) => tree.stale(this, event));
  }

  filter() {
    const { tree, values } = this;
    return both(tree.filter, ...values.map((value, level) => equals(tree.grouping[level], value)));
  }

  /** The order of this node's rows: a group view sorts only by a field it projects. */
  orderby() {
    const { orderby, grouping } = this.tree;
    if (!this.grouped) return orderby || undefined;
    const field = grouping[this.depth];
    const sorted = orderby.match(/^\[?\/([^\s\]]+)\]?(\s+(ASC|DESC))?$/i);
    if (sorted && this.tree.projected(this.depth).has(sorted[1])) return orderby;
    return `${path(field)} ASC`;
  }

  open() {
    const { tree } = this;
    const filter = this.filter() || undefined;
    if (!this.grouped) {
      return tree.client.viewport(tree.topic, { filter, orderby: this.orderby(), rows: [0, tree.pageSize], options: tree.options });
    }
    return tree.client.aggregate(tree.topic, {
      filter, orderby: this.orderby(), rows: [0, GROUP_LIMIT - 1], options: tree.options,
      grouping: tree.grouping.slice(0, this.depth + 1).map(path),
      projection: tree.projection(this.depth),
    });
  }

  /** Rows this node holds: its count, capped for groups. */
  get count() {
    const { view } = this;
    // Without a count (a server that does not count), the view reaches as far as the window has rows.
    const count = view.count ?? (view.first ?? 0) + (view.rows?.length ?? 0);
    return this.grouped ? Math.min(count, GROUP_LIMIT) : count;
  }

  /** Rows this node and its expanded children show. */
  size() {
    let size = this.count;
    if (this.grouped) for (const child of this.present()) size += child.size();
    return size;
  }

  /** Expanded children whose group is (still) among this node's rows, with its index. */
  present() {
    /** @type {Node[]} */
    const found = [];
    if (this.children.size === 0) return found;
    for (const record of this.view.rows ?? []) {
      const child = this.children.get(this.tree.groupId(record, this.depth));
      if (child) found.push(child);
    }
    return found;
  }

  /** @param {string} filterNow @param {string} orderbyNow */
  async refine(filterNow, orderbyNow) {
    const work = [];
    if (filterNow !== this.appliedFilter) {
      this.appliedFilter = filterNow;
      work.push(this.view.filterBy(this.filter()));
    }
    const order = this.orderby() ?? "";
    if (order !== this.appliedOrder) {
      this.appliedOrder = order;
      work.push(this.view.sortBy(order));
    }
    for (const child of this.children.values()) work.push(child.refine(filterNow, orderbyNow));
    await Promise.all(work);
  }

  close() {
    for (const child of this.children.values()) child.close();
    this.children.clear();
    this.view.close();
  }
}

/**
 * One row of the grid: a record, or a group (with its totals, its level and whether it is open).
 * @typedef {{ kind: "record" | "group", record: any, key: string, depth: number,
 *   id?: string, open?: boolean, values?: unknown[] }} Row
 */

/**
 * @typedef {{
 *   client: any, topic: string, filter: string, orderby: string, grouping: string[],
 *   totals: (depth: number) => string[], options?: string, pageSize?: number, keyField?: string,
 * }} TreeSettings
 */

export class RowTree {
  /**
   * @param {TreeSettings} settings
   * @param {{ changed?: () => void, failed?: (event: any) => void, stale?: (stale: boolean) => void,
   *   news?: (change: any, left: boolean) => void }} [listeners]  `news`: each change a view
   *   received (not snapshots, nor a move's or a reconnect's OOFs); `left`: an OOF of the view's
   *   own records (not a group's, nor of the rows under a group: a row whose group changed moves
   *   from one group's view to another's, and stays in the view)
   */
  constructor(settings, listeners = {}) {
    this.client = settings.client;
    this.topic = settings.topic;
    this.filter = settings.filter;
    this.orderby = settings.orderby;
    this.grouping = settings.grouping;
    this.totals = settings.totals;
    this.options = settings.options;
    this.keyField = settings.keyField;
    this.pageSize = settings.pageSize ?? 100;
    this.listeners = listeners;
    /** @type {Set<Node>} nodes whose connection is down */
    this.staleNodes = new Set();
    this.root = new Node(this, []);
    this.ready = this.root.view.ready;
  }

  /** The projection of a group level: its grouping fields, a total per number column, a count. @param {number} depth */
  projection(depth) {
    const fields = this.grouping.slice(0, depth + 1);
    return [...fields.map(path), ...this.totals(depth), `COUNT(${path(this.keyField ?? fields[depth])}) AS /${COUNT}`];
  }

  /** The fields a level's groups carry. @param {number} depth */
  projected(depth) {
    const names = this.totals(depth).map((item) => item.replace(/^.* AS \[?\//, "").replace(/]$/, ""));
    return new Set([...this.grouping.slice(0, depth + 1), ...names, COUNT]);
  }

  /** A group's id among its siblings: its values from the root. @param {any} record @param {number} depth */
  groupId(record, depth) {
    return JSON.stringify(this.grouping.slice(0, depth + 1).map((field) => record?.[field] ?? null));
  }

  changed() { this.listeners.changed?.(); }

  /** A change one of the views received: news unless a snapshot, or an OOF that is not (a move's).
   * @param {Node} node @param {any} change */
  noted(node, change) {
    if (change.kind === "snapshot" || (change.kind === "oof" && !change.news)) return;
    this.listeners.news?.(change, change.kind === "oof" && node === this.root && !node.grouped);
  }

  /** @param {Node} node @param {any} event */
  failed(node, event) { this.listeners.failed?.({ ...event, root: node === this.root }); }

  /** @param {Node} node @param {{ stale: boolean }} event */
  stale(node, { stale }) {
    if (stale) this.staleNodes.add(node);
    else this.staleNodes.delete(node);
    this.listeners.stale?.(this.staleNodes.size > 0);
  }

  get count() { return this.root.count; }

  /** Records in the view: the root's count, or with grouping the sum of its groups' counts. */
  records() {
    if (!this.root.grouped) return this.root.count;
    let sum = 0;
    for (const group of this.root.view.rows ?? []) sum += Number(group?.[COUNT]) || 0;
    return sum;
  }

  /** Rows shown, groups and their open rows included. */
  size() { return this.root.size(); }

  /** A new filter or order, applied to every open view in place. @param {string} filter @param {string} orderby */
  async refine(filter, orderby) {
    this.filter = filter;
    this.orderby = orderby;
    await this.root.refine(filter, orderby);
  }

  /** Open or close the group on row `row`. @param {Row} row */
  toggle(row) {
    if (row.kind !== "group" || !row.values) return;
    let node = this.root;
    for (let level = 0; level < row.depth; level++) {
      const next = node.children.get(JSON.stringify(row.values.slice(0, level + 1)));
      if (!next) return;
      node = next;
    }
    const id = JSON.stringify(row.values);
    const open = node.children.get(id);
    if (open) {
      open.close();
      node.children.delete(id);
    } else {
      node.children.set(id, new Node(this, row.values));
    }
    this.changed();
  }

  /**
   * The rows from `first` to `last` (inclusive, clipped to the tree's size), after moving every
   * record viewport that shows part of them so that it holds them (plus a margin).
   * @param {number} first @param {number} last @returns {Promise<Row[]>}
   */
  async rows(first, last) {
    for (let attempt = 0; attempt < 3; attempt++) {
      /** @type {Map<Node, [number, number]>} */
      const wanted = new Map();
      const rows = this.walk(first, last, wanted);
      const moves = [];
      for (const [node, [low, high]] of wanted) {
        const { view } = node;
        const count = node.count;
        const held = view.rows && view.first !== null && view.first !== undefined && view.first <= low
          && (view.last >= high || view.last >= count - 1);
        if (held) continue;
        const from = Math.max(0, low - MARGIN);
        moves.push(view.moveTo(from, Math.max(from + this.pageSize, high + MARGIN)));
      }
      if (moves.length === 0) return rows;
      await Promise.all(moves);
    }
    return this.walk(first, last, new Map());
  }

  /**
   * The rows first..last as far as the views hold them; for each record node the range of its
   * rows asked for goes into `wanted`.
   * @param {number} first @param {number} last @param {Map<Node, [number, number]>} wanted
   */
  walk(first, last, wanted) {
    /** @type {Row[]} */
    const out = [];
    /** @param {Node} node @param {number} offset  the flat index of the node's first row */
    const visit = (node, offset) => {
      const count = node.count;
      if (!node.grouped) {
        const low = Math.max(first - offset, 0);
        const high = Math.min(last - offset, count - 1);
        if (low > high) return;
        wanted.set(node, [low, high]);
        const { view } = node;
        for (let index = low; index <= high; index++) {
          const at = index - (view.first ?? 0);
          const record = view.rows?.[at];
          out.push({ kind: "record", record, key: view.keys?.[at] ?? "", depth: node.depth });
        }
        return;
      }
      let position = offset;
      const rows = node.view.rows ?? [];
      for (let index = 0; index < count && position <= last; index++) {
        const record = rows[index];
        const id = this.groupId(record, node.depth);
        const child = node.children.get(id);
        if (position >= first) {
          out.push({
            kind: "group", record, key: node.view.keys?.[index] ?? id, depth: node.depth, id,
            open: Boolean(child), values: JSON.parse(id),
          });
        }
        position += 1;
        if (child) {
          const size = child.size();
          if (position + size > first) visit(child, position);
          position += size;
        }
      }
    };
    visit(this.root, 0);
    return out;
  }

  /** Every record and group row held now (for learning the columns). @returns {any[]} */
  held() {
    /** @type {any[]} */
    const records = [];
    const visit = (/** @type {Node} */ node) => {
      records.push(...(node.view.rows ?? []).filter(Boolean).slice(0, 200));
      for (const child of node.children.values()) visit(child);
    };
    visit(this.root);
    return records;
  }

  close() { this.root.close(); }
}

/** The field a group row counts its records in. */
export const COUNT = "__rows";
