// A view's companion panes: panes beside a view that follow the rows selected in it, a detail pane
// (static/details.js) and a chart (static/charts.js). What a view asks for is in its settings
// (`details=1`, `chart=px`: so in the link and in layouts), and a companion's pane id is its
// view's pane id, marked by its kind (static/layouts.js).

import { ChartPane } from "/static/charts.js";
import { DetailPane } from "/static/details.js";
import { companionId } from "/static/layouts.js";

/**
 * What a companion pane does. @typedef {{ element: HTMLElement, select: (records: any[]) => void,
 *   close: () => void, chart?: (field: string) => void }} CompanionPane
 * @typedef {import("/static/panel.js").Panel} Panel
 * @typedef {import("/static/settings.js").ViewSettings} ViewSettings
 */

/** Each kind: whether a view asks for it, its pane's title, how it is made and how it is let go. */
const KINDS = {
  details: {
    wanted: (/** @type {ViewSettings} */ s) => s.details,
    title: (/** @type {ViewSettings} */ s) => `details · ${s.topic}`,
    make: (/** @type {Panel} */ panel) => /** @type {CompanionPane} */ (new DetailPane(panel)),
    drop: (/** @type {ViewSettings} */ s) => { s.details = false; },
  },
  chart: {
    wanted: (/** @type {ViewSettings} */ s) => s.chart !== "",
    title: (/** @type {ViewSettings} */ s) => `chart · ${s.topic} · ${s.chart}`,
    make: (/** @type {Panel} */ panel) => /** @type {CompanionPane} */ (new ChartPane(panel, panel.settings.chart)),
    drop: (/** @type {ViewSettings} */ s) => { s.chart = ""; },
  },
};

export class Companions {
  /**
   * @param {import("/static/workspace.js").Workspace} workspace
   * @param {(panel: Panel) => string} paneOf  a view's pane id
   * @param {() => void} changed  a view's settings changed (the link is written again)
   */
  constructor(workspace, paneOf, changed) {
    this.workspace = workspace;
    this.paneOf = paneOf;
    this.changed = changed;
    /** @type {Map<string, { panel: Panel, kind: keyof typeof KINDS, pane: CompanionPane }>} by pane id */
    this.open = new Map();
  }

  /** Open, change or close a view's companions as its settings now ask. In a layout being opened,
   * their panes are there already, to be filled. @param {Panel} panel */
  sync(panel) {
    for (const kind of /** @type {(keyof typeof KINDS)[]} */ (Object.keys(KINDS))) {
      const { wanted, title, make } = KINDS[kind];
      const id = companionId(this.paneOf(panel), kind);
      const have = this.open.get(id);
      if (!wanted(panel.settings)) {
        if (have) this.letGo(id);
        continue;
      }
      if (have) {
        have.pane.chart?.(panel.settings.chart);
        this.workspace.setTitle(id, title(panel.settings));
        continue;
      }
      const pane = make(panel);
      this.open.set(id, { panel, kind, pane });
      if (this.workspace.ids().includes(id)) this.workspace.fill(id, pane.element);
      else this.workspace.add(id, title(panel.settings), pane.element);
      pane.select([...panel.grid.selection.records.values()]);
    }
    panel.$(".details").setAttribute("aria-pressed", String(panel.settings.details));
    this.changed();
  }

  /** The rows selected in a view changed. @param {Panel} panel @param {any[]} records */
  selected(panel, records) {
    for (const { panel: owner, pane } of this.open.values()) if (owner === panel) pane.select(records);
  }

  /** A pane closed from its tab: when a companion's, its view no longer asks for it. @param {string} id */
  closed(id) {
    const companion = this.open.get(id);
    if (!companion) return;
    KINDS[companion.kind].drop(companion.panel.settings);
    this.sync(companion.panel);
  }

  /** A view closed: its companions go with it. @param {Panel} panel */
  closeAll(panel) {
    for (const [id, { panel: owner }] of this.open) if (owner === panel) this.letGo(id);
  }

  /** The companion panes open, by id. */
  ids() {
    return new Set(this.open.keys());
  }

  /** @param {string} id */
  letGo(id) {
    const companion = this.open.get(id);
    if (!companion) return;
    this.open.delete(id);
    companion.pane.close();
    this.workspace.remove(id);
  }
}
