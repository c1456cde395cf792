// What every uPlot chart of the console shares: a plot in its own node, sized to the width of its
// container at a fixed height, resized with the window and destroyed with the view.

import { el } from "./dom.js";

export class PlotHolder {
  constructor(height) {
    this.height = height;
    this.plotNode = el("div", { class: "plot" });
    this.plot = null;
  }

  resize() {
    if (this.plot) this.plot.setSize(this._size());
  }

  destroy() {
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }

  _size() {
    return { width: Math.max(320, this.plotNode.clientWidth || 640), height: this.height };
  }
}
