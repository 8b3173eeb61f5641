// A small chart of one numeric column over time, summed over the view's rows (a desk's position
// or P&L), drawn by uPlot (https://github.com/leeoniya/uPlot, MIT). One point a second, the last
// five minutes.

import uPlot from "/static/vendor/uplot/uPlot.esm.js";

const POINTS = 300;

export class Sparkline {
  /** @param {HTMLElement} element  where the chart goes */
  constructor(element) {
    this.element = element;
    /** @type {number[]} */
    this.times = [];
    /** @type {number[]} */
    this.values = [];
    const style = getComputedStyle(document.documentElement);
    const line = style.getPropertyValue("--accent").trim() || "#2f6feb";
    this.plot = new uPlot({
      width: 240,
      height: 44,
      cursor: { show: false },
      legend: { show: false },
      select: { show: false, left: 0, top: 0, width: 0, height: 0 },
      scales: { x: { time: true } },
      axes: [{ show: false }, { show: false }],
      series: [{}, { stroke: line, width: 1.5, fill: `${line}22`, points: { show: false } }],
    }, [[], []], element);
  }

  /** A new point: `value` at `now` (seconds). @param {number} now @param {number} value */
  add(now, value) {
    this.times.push(now);
    this.values.push(value);
    if (this.times.length > POINTS) {
      this.times.shift();
      this.values.shift();
    }
    this.plot.setData([this.times, this.values]);
  }

  destroy() {
    this.plot.destroy();
  }
}
