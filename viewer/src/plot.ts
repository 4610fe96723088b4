/** Plots: a line plot (uPlot) for 1-D numbers, a heatmap on a canvas with a colour bar and a
 * hover readout for 2-D ones. */
import uPlot from "uplot";
import { count, ordinal } from "./format";

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** `ys[i]` at x = `x0 + i * step`: a line. NaN and infinities are left as gaps. */
export function linePlot(host: HTMLElement, ys: Float64Array, x0: number, step: number, label: string): uPlot {
  const xs = new Float64Array(ys.length);
  const clean: (number | null)[] = new Array(ys.length);
  for (let i = 0; i < ys.length; i++) {
    xs[i] = x0 + i * step;
    clean[i] = Number.isFinite(ys[i]) ? ys[i] : null;
  }
  const box = el("div", "lineplot");
  host.append(box);
  const width = Math.max(320, Math.min(900, host.clientWidth || 700) - 16);
  return new uPlot(
    {
      width,
      height: 300,
      legend: { show: true },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false } },
      series: [{ label: "index" }, { label, stroke: "#2864c7", width: 1.25, points: { show: ys.length <= 200 } }],
      axes: [{}, { size: 70 }],
    },
    [xs as unknown as number[], clean],
    box,
  );
}

/** Viridis-like: dark blue through teal to yellow, 256 colours (RGB). */
const STOPS: [number, number, number][] = [
  [68, 1, 84],
  [71, 44, 122],
  [59, 81, 139],
  [44, 113, 142],
  [33, 144, 141],
  [39, 173, 129],
  [92, 200, 99],
  [170, 220, 50],
  [253, 231, 37],
];
const LUT = new Uint8Array(256 * 3);
for (let i = 0; i < 256; i++) {
  const t = (i / 255) * (STOPS.length - 1);
  const k = Math.min(STOPS.length - 2, Math.floor(t));
  const f = t - k;
  for (let c = 0; c < 3; c++) LUT[i * 3 + c] = Math.round(STOPS[k][c] * (1 - f) + STOPS[k + 1][c] * f);
}

export interface HeatmapAxes {
  /** Index in the full array of sample row 0 and the step between sample rows. */
  rowName: string;
  colName: string;
  rowStep: number;
  colStep: number;
  /** Text for the readout: the full-array index of sample (r, c). */
  where(r: number, c: number): string;
}

/** `data` (rows x cols, row-major) as an image, scaled to fit, with a colour bar beside it. */
export function heatmap(host: HTMLElement, data: Float64Array, rows: number, cols: number, axes: HeatmapAxes): HTMLCanvasElement {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < data.length; i++) {
    const x = data[i];
    if (x < min) min = x;
    if (x > max) max = x;
  }
  if (min === Infinity) {
    min = 0;
    max = 0;
  }
  const wrap = el("div", "heatmap-wrap");
  const canvas = el("canvas", "heatmap");
  canvas.width = cols;
  canvas.height = rows;
  canvas.dataset.min = String(min);
  canvas.dataset.max = String(max);
  const ctx = canvas.getContext("2d");
  if (ctx === null) throw new Error("this browser gives no 2-D canvas");
  const img = ctx.createImageData(cols, rows);
  const px = img.data;
  const span = max - min;
  const scale = span > 0 && Number.isFinite(span) ? 255 / span : 0;
  for (let i = 0; i < data.length; i++) {
    const x = data[i];
    const o = i * 4;
    if (Number.isNaN(x)) {
      px[o] = px[o + 1] = px[o + 2] = 160;
    } else {
      const k = scale ? Math.max(0, Math.min(255, Math.round((x - min) * scale))) * 3 : 0;
      px[o] = LUT[k];
      px[o + 1] = LUT[k + 1];
      px[o + 2] = LUT[k + 2];
    }
    px[o + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
  // shown at least 256 px on its long side, at most 640 x 560, pixels kept square
  const fit = Math.min(640 / cols, 560 / rows, Math.max(1, 256 / Math.max(rows, cols)));
  canvas.style.width = `${Math.max(1, Math.round(cols * fit))}px`;
  canvas.style.height = `${Math.max(1, Math.round(rows * fit))}px`;

  const bar = el("div", "colorbar");
  bar.dataset.min = String(min);
  bar.dataset.max = String(max);
  const barCanvas = el("canvas");
  barCanvas.width = 16;
  barCanvas.height = 256;
  const bctx = barCanvas.getContext("2d");
  if (bctx) {
    const bimg = bctx.createImageData(16, 256);
    for (let y = 0; y < 256; y++) {
      const k = (255 - y) * 3;
      for (let x = 0; x < 16; x++) {
        const o = (y * 16 + x) * 4;
        bimg.data[o] = LUT[k];
        bimg.data[o + 1] = LUT[k + 1];
        bimg.data[o + 2] = LUT[k + 2];
        bimg.data[o + 3] = 255;
      }
    }
    bctx.putImageData(bimg, 0, 0);
  }
  barCanvas.style.height = canvas.style.height;
  bar.append(el("span", "colorbar-max", short(max)), barCanvas, el("span", "colorbar-min", short(min)));

  const readout = el("div", "readout", "hover over the image for values");
  canvas.addEventListener("mousemove", (ev) => {
    const r = canvas.getBoundingClientRect();
    const c = Math.floor(((ev.clientX - r.left) / r.width) * cols);
    const w = Math.floor(((ev.clientY - r.top) / r.height) * rows);
    if (c < 0 || c >= cols || w < 0 || w >= rows) return;
    readout.textContent = `${axes.where(w, c)} = ${data[w * cols + c]}`;
  });
  canvas.addEventListener("mouseleave", () => {
    readout.textContent = "hover over the image for values";
  });
  const row = el("div", "heatmap-row");
  row.append(canvas, bar);
  const note =
    axes.rowStep > 1 || axes.colStep > 1
      ? `every ${axes.rowStep === 1 ? "" : ordinal(axes.rowStep) + " "}row and every ${axes.colStep === 1 ? "" : ordinal(axes.colStep) + " "}column: ${count(rows)} × ${count(cols)} samples`
      : `${count(rows)} × ${count(cols)}`;
  wrap.append(el("div", "heatmap-axes", `rows: ${axes.rowName}, columns: ${axes.colName}; ${note}`), row, readout);
  host.append(wrap);
  return canvas;
}


/** A label: six significant digits at most (the exact value is in data-min / data-max). */
function short(x: number): string {
  return Number.isInteger(x) ? String(x) : String(Number(x.toPrecision(6)));
}
