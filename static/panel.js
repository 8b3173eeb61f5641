// One view on the dashboard: its table (static/grid.js over a tree of the server's viewports,
// static/tree.js), its toolbar (pause, group levels, columns, quick filters), its figures, and
// what it says when it has no rows to show. Sorting, quick filters and grouping are the server's:
// a new orderby or filter on the same viewports, or aggregated views for the groups.

import { openColumnMenu } from "/static/column_menu.js";
import { Columns } from "/static/columns.js";
import { exportView } from "/static/csv.js";
import { Departures } from "/static/departures.js";
import { whyEmpty } from "/static/empty_state.js";
import { FIELD_SAMPLE, unknownFields } from "/static/filter_fields.js";
import { Figures } from "/static/figures.js";
import { closeMenusWhenDone } from "/static/menus.js";
import { formatNumber } from "/static/format.js";
import { Grid } from "/static/grid.js";
import { withQuickFilters } from "/static/quick.js";
import { sortOf, withTimestamp } from "/static/settings.js";
import { RowTree, both, path } from "/static/tree.js";
import { wireLinkSelect } from "/static/links.js";

/**
 * What a panel needs from the page.
 * @typedef {{
 *   client: any, keyFields: (topic: string) => Set<string>, connection: () => { state: string, attempt: number },
 *   showError: (message: string) => void, changed: () => void, closed: (panel: Panel) => void,
 *   place: (panel: Panel) => void, selected: (panel: Panel, records: any[]) => void,
 *   linkChoices: (panel: Panel) => string[], relink: (panel: Panel) => void,
 *   companions: (panel: Panel) => void,
 * }} PanelHost
 */

export class Panel {
  /** @param {PanelHost} host @param {import("/static/settings.js").ViewSettings} settings */
  constructor(host, settings) {
    this.host = host;
    this.settings = settings;
    const { topic, filter, options } = settings;
    const fragment = /** @type {HTMLTemplateElement} */ (document.getElementById("view-template")).content.cloneNode(true);
    this.element = /** @type {HTMLElement} */ (/** @type {DocumentFragment} */ (fragment).querySelector(".view"));
    this.$(".topic").textContent = topic;
    this.$(".filter").textContent = filter || "all records";
    this.$(".options").textContent = options || "";
    this.$(".close").addEventListener("click", () => this.close());
    this.empty = this.$(".empty-state");
    this.departures = new Departures(this.$(".departures"));
    this.figures = new Figures(this.element);
    host.place(this); // a pane of the workspace (static/workspace.js), before the table measures it
    this.columns = new Columns(settings, () => host.keyFields(topic));
    this.grid = new Grid(this.$(".table"), {
      columns: this.columns,
      tree: () => this.tree,
      sortOf: (field) => {
        const sort = sortOf(this.settings.orderby);
        return sort?.field === field ? /** @type {"asc" | "desc"} */ (sort.dir) : null;
      },
      sort: (field) => this.sort(field),
      quick: (field, text) => this.quick(field, text),
      quickText: (field) => this.settings.quick[field] ?? "",
      menu: (field, anchor) => this.menu(field, anchor),
      toggle: (row) => this.tree?.toggle(row),
      flashes: (field) => !this.settings.noflash.includes(field),
      selected: (records) => host.selected(this, records),
      resized: (field, width) => {
        this.columns.widths.set(field, width);
        this.columns.touched = true;
        host.changed();
      },
    });
    /** @type {RowTree | null} */
    this.tree = null;
    this.established = false;
    this.paused = false;
    this.waiting = 0;
    this.updates = 0;
    this.lastMessageAt = 0;
    this.stale = false;
    /** @type {string} the server's reason, when it refused the view */
    this.error = "";
    /** why the topic holds no records, when the server says it keeps none */
    this.notConfigured = "";
    this.wireToolbar();
    this.showEmpty();
    this.open();
  }

  /** @param {string} selector @returns {HTMLElement} */
  $(selector) {
    return /** @type {HTMLElement} */ (this.element.querySelector(selector));
  }

  /** The filter the server applies: the view's own, the quick filters, the linked view's selection. */
  filter() {
    const quick = withQuickFilters(this.settings.filter, this.settings.quick, (field) => this.columns.kind(field));
    return both(quick, this.linkFilter ?? "");
  }

  /** The records selected in the view this one follows, as a filter (static/links.js). @param {string} filter */
  setLinked(filter) {
    if (filter === (this.linkFilter ?? "")) return;
    this.linkFilter = filter;
    this.$(".linked").hidden = !filter;
    this.$(".linked").textContent = filter ? `linked: ${filter}` : "";
    this.refine();
  }

  /** Open the view's tree of server views (again, after the grouping or the totals changed). */
  async open() {
    this.tree?.close();
    this.tree = null;
    this.departures.draw(true); // (they were of the view as it was)
    const { client } = this.host;
    const { topic, options, group } = this.settings;
    const generation = (this.generation = (this.generation ?? 0) + 1);
    if ((group.length > 0 || Object.keys(this.settings.quick).length > 0) && this.columns.fields.length === 0) {
      // Totals are over number columns, and a quick filter reads as a number on one: a first
      // screen of records (a one-off query, in no order: the cheapest) says which columns they are.
      try {
        this.columns.learn(await client.sow(topic, { filter: this.settings.filter || undefined, topN: 100 }));
      } catch (error) {
        this.refused(String(/** @type {any} */ (error)?.reason ?? /** @type {any} */ (error)?.message ?? error));
        return;
      }
      if (generation !== this.generation) return;
    }
    const keyField = [...this.host.keyFields(topic)][0];
    const tree = new RowTree({
      client, topic, filter: this.filter(), orderby: this.settings.orderby, grouping: [...group],
      totals: (depth) => this.columns.projection(group.slice(0, depth + 1)),
      options: withTimestamp(options), keyField,
    }, {
      changed: () => this.changed(),
      news: (change, left) => this.news(change, left),
      failed: ({ reason, root }) => (root ? this.refused(reason) : this.showViewError(reason)),
      stale: (stale) => {
        this.stale = stale;
        this.element.classList.toggle("stale", stale);
        this.tick();
      },
    });
    this.tree = tree;
    tree.ready.then(() => {
      if (tree !== this.tree) return;
      this.established = true;
      this.lastMessageAt = Date.now();
      this.changed();
      if (tree.count === 0) {
        // An empty view: an empty topic, or a name the server keeps no records for (its answer
        // to a `sow` tells which, in its own words), or a filter on a field no record has (a
        // sample of the topic's records tells which fields they have).
        client.sow(topic, { topN: FIELD_SAMPLE }).then(
          (/** @type {any[]} */ records) => {
            this.notConfigured = "";
            this.unknownFields = unknownFields(this.settings.filter, records);
          },
          (/** @type {any} */ error) => { this.notConfigured = String(error?.reason ?? error?.message ?? error); },
        ).finally(() => this.showEmpty());
      }
      this.showEmpty();
    }, () => {});
    this.grid.relayout();
    this.showGroups();
  }

  /** Something the views show changed: learn new columns, draw (unless paused). */
  changed() {
    this.lastMessageAt = Date.now();
    if (!this.tree) return;
    if (this.columns.learn(this.tree.held())) {
      this.toolbarFields();
      this.grid.relayout();
    }
    if (this.paused) return;
    this.showCount();
    this.grid.draw();
    this.showEmpty();
  }

  /** A change a view received (web/view.js): counted; a record a change took out of the view
   * (`left`) is said in words under the table. @param {any} change @param {boolean} left */
  news(change, left) {
    this.updates += 1;
    if (this.paused) this.waiting += 1;
    if (left) this.departures.add(change, [...this.host.keyFields(this.settings.topic)], this.filter());
  }

  /** The view's size: its records, and its groups when grouped. */
  showCount() {
    if (this.tree) this.figures.count(this.tree);
  }

  /** A view the server refuses at once (a bad filter) goes; one it refuses later (after a
   * reconnect, or a quick filter it cannot take) stays on screen with the reason.
   * @param {string} reason */
  refused(reason) {
    if (!this.established) {
      this.host.showError(`${this.settings.topic}: ${reason}`);
      this.close();
      return;
    }
    this.showViewError(`refused: ${reason}`);
  }

  /** @param {string} text */
  showViewError(text) {
    this.error = text;
    this.element.classList.add("failed");
    this.$(".view-error").textContent = text;
    this.showEmpty();
  }

  clearViewError() {
    this.error = "";
    this.element.classList.remove("failed");
    this.$(".view-error").textContent = "";
  }

  close() {
    this.generation = (this.generation ?? 0) + 1;
    this.tree?.close();
    this.tree = null;
    this.grid.destroy();
    this.element.remove();
    this.host.closed(this);
  }

  /** Click on a header: ascending, then descending, by the server. @param {string} field */
  sort(field) {
    const current = sortOf(this.settings.orderby);
    const dir = current?.field === field && current.dir === "asc" ? "DESC" : "ASC";
    this.settings.orderby = `${path(field)} ${dir}`;
    this.refine();
  }

  /** @param {string} field @param {string} text */
  quick(field, text) {
    if ((this.settings.quick[field] ?? "") === text.trim()) return;
    if (text.trim()) this.settings.quick[field] = text.trim();
    else delete this.settings.quick[field];
    this.refine();
  }

  /** The new filter and order, on the views already open. */
  refine() {
    this.host.changed();
    this.grid.draw();
    this.$(".clear-quick").hidden = Object.keys(this.settings.quick).length === 0;
    if (!this.tree) return;
    this.tree.refine(this.filter(), this.settings.orderby).then(
      () => { this.clearViewError(); this.grid.draw(); this.showEmpty(); },
      (/** @type {any} */ error) => this.showViewError(`refused: ${error?.reason ?? error?.message ?? error}`),
    );
  }

  /** @param {string[]} levels */
  groupBy(levels) {
    this.settings.group = levels;
    this.host.changed();
    this.open();
  }

  wireToolbar() {
    this.$(".details").addEventListener("click", () => {
      this.settings.details = !this.settings.details;
      this.host.companions(this);
    });
    const pause = /** @type {HTMLButtonElement} */ (this.$(".pause"));
    pause.addEventListener("click", () => {
      this.paused = !this.paused;
      pause.setAttribute("aria-pressed", String(this.paused));
      pause.textContent = this.paused ? "▶" : "❚❚";
      pause.setAttribute("aria-label", this.paused ? "Resume" : "Pause");
      this.element.classList.toggle("paused", this.paused);
      if (!this.paused) {
        this.waiting = 0;
        this.changed();
      }
      this.tick();
    });
    const group = /** @type {HTMLSelectElement} */ (this.$("select.group"));
    group.addEventListener("change", () => {
      if (group.value && !this.settings.group.includes(group.value)) this.groupBy([...this.settings.group, group.value]);
      group.value = "";
    });
    this.$(".clear-quick").addEventListener("click", () => {
      for (const field of Object.keys(this.settings.quick)) delete this.settings.quick[field];
      for (const field of this.columns.fields) this.grid.quickInput(field).value = "";
      this.refine();
    });
    this.$(".clear-quick").hidden = Object.keys(this.settings.quick).length === 0;
    const csv = /** @type {HTMLButtonElement} */ (this.$(".export-csv"));
    csv.addEventListener("click", () => exportView(csv, {
      ...this.settings,
      client: this.host.client,
      filter: this.filter(),
      fields: this.columns.visible(),
      failed: (/** @type {string} */ reason) => this.host.showError(`${this.settings.topic}: the CSV export failed: ${reason}`),
    }));
    this.linkChoices = wireLinkSelect(this, /** @type {HTMLSelectElement} */ (this.$("select.link")));
    closeMenusWhenDone(/** @type {HTMLDetailsElement} */ (this.$(".view-menu")), this.$(".column-popup"));
  }

  /** The group levels, each a button that removes it. */
  showGroups() {
    this.toolbarFields();
    const list = this.$(".group-levels");
    list.replaceChildren(...this.settings.group.map((field, level) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "group-level";
      button.title = `Stop grouping by ${field}`;
      button.textContent = `${level > 0 ? "› " : ""}${field} ×`;
      button.addEventListener("click", () => this.groupBy(this.settings.group.filter((f) => f !== field)));
      return button;
    }));
  }

  /** The toolbar's lists of fields: group by any, show or hide any. */
  toolbarFields() {
    const fields = this.columns.fields;
    const select = /** @type {HTMLSelectElement} */ (this.$("select.group"));
    select.replaceChildren(new Option(this.settings.group.length ? "+ level…" : "group by…", ""),
      ...fields.filter((f) => !this.settings.group.includes(f)).map((name) => new Option(name, name)));
    select.value = "";
    const list = this.$(".column-list");
    list.replaceChildren(...fields.map((field) => {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = !this.columns.hidden.has(field);
      box.addEventListener("change", () => this.showColumn(field, box.checked));
      label.append(box, document.createTextNode(` ${field}`));
      return label;
    }));
  }

  /** @param {string} field @param {boolean} shown */
  showColumn(field, shown) {
    this.columns.show(field, shown);
    this.toolbarFields();
    this.grid.relayout();
    this.host.changed();
  }

  /** A column's menu, under its ⋮ button (static/column_menu.js). @param {string} field @param {HTMLElement} anchor */
  menu(field, anchor) {
    openColumnMenu(this, field, anchor);
  }

  /** What the view looks like now, for the URL. @returns {import("/static/settings.js").ViewSettings} */
  current() {
    this.settings.columns = this.columns.layout();
    return this.settings;
  }

  /** Once a second: the figures, the stale badge, the empty state. */
  tick() {
    this.linkChoices?.();
    this.departures.draw();
    this.showCount();
    const age = this.figures.tick(this.updates, this.lastMessageAt, this.tree?.root.view.latency);
    this.$(".waiting").textContent = this.paused ? `paused: ${formatNumber(this.waiting, 0)} updates waiting` : "";
    const { state, attempt } = this.host.connection();
    this.$(".stale-badge").textContent = this.stale
      ? `stale · last message ${age} ago · ${state === "open" ? "resubscribing" : `reconnecting, attempt ${attempt}`}`
      : "stale";
    this.showEmpty();
  }

  /** The words over an empty table: why it has no rows. */
  showEmpty() {
    const [kind, text] = whyEmpty({
      ...this.settings,
      error: this.error,
      established: Boolean(this.established),
      connection: this.host.connection(),
      count: this.tree?.count ?? 0,
      notConfigured: this.notConfigured ?? "",
      unknownFields: this.unknownFields,
      linkFilter: this.linkFilter ?? "",
    });
    if (this.empty.textContent !== text) this.empty.textContent = text;
    this.empty.dataset.kind = kind;
    this.empty.hidden = text === "";
  }
}
