/**
 * Draws tick lateness over time as one SVG: phases side by side on the time axis, each in its own
 * colour, lateness on a logarithmic axis (0.01 ms to 10 s) so an idle millisecond and a
 * half-second stall are both readable. Samples are reduced to the worst value per bucket, so a run of any
 * length draws as at most `bucketsMax` points per phase.
 */
export interface PhaseSeries {
  name: string;
  /** Seconds since the phase began, and lateness in milliseconds. */
  samples: { atS: number; latenessMs: number }[];
  durationS: number;
}

const width = 1000;
const height = 420;
const left = 70;
const right = 20;
const top = 40;
const bottom = 60;
const floorMs = 0.01;
const ceilingMs = 10_000;
const bucketsMax = 400;
const colours = ["#4c78a8", "#54a24b", "#f58518", "#e45756", "#b279a2", "#72b7b2", "#9d755d"];

export function latenessChartSvg(phases: readonly PhaseSeries[], title: string): string {
  const totalS = phases.reduce((s, p) => s + p.durationS, 0) || 1;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const x = (s: number) => left + (s / totalS) * plotW;
  const y = (ms: number) => {
    const v = Math.log10(Math.min(ceilingMs, Math.max(floorMs, ms)));
    const lo = Math.log10(floorMs);
    const hi = Math.log10(ceilingMs);
    return top + plotH - ((v - lo) / (hi - lo)) * plotH;
  };
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escape(title)}</text>`,
  ];
  for (let ms = floorMs; ms <= ceilingMs; ms *= 10) {
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y(ms)}" y2="${y(ms)}" stroke="#ddd"/>`);
    parts.push(`<text x="${left - 6}" y="${y(ms) + 4}" text-anchor="end">${label(ms)}</text>`);
  }
  parts.push(
    `<text transform="translate(16 ${
      top + plotH / 2
    }) rotate(-90)" text-anchor="middle">tick lateness (ms, log)</text>`,
  );
  let offsetS = 0;
  phases.forEach((phase, i) => {
    const colour = colours[i % colours.length]!;
    const points = worstPerBucket(phase, Math.max(1, Math.round((bucketsMax * phase.durationS) / totalS)))
      .map((p) => `${x(offsetS + p.atS).toFixed(1)},${y(p.latenessMs).toFixed(1)}`);
    parts.push(`<line x1="${x(offsetS)}" x2="${x(offsetS)}" y1="${top}" y2="${top + plotH}" stroke="#999"/>`);
    if (points.length > 0) {
      parts.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${points.join(" ")}"/>`,
      );
    }
    parts.push(
      `<text x="${x(offsetS + phase.durationS / 2)}" y="${
        top + plotH + 20
      }" text-anchor="middle" fill="${colour}">${escape(phase.name)}</text>`,
    );
    offsetS += phase.durationS;
  });
  parts.push(
    `<text x="${left + plotW / 2}" y="${height - 12}" text-anchor="middle">time (phases of ${
      (totalS / Math.max(1, phases.length)).toFixed(0)
    } s each; worst lateness per ${(totalS / bucketsMax).toFixed(2)} s shown)</text>`,
  );
  parts.push("</svg>");
  return parts.join("\n");
}

function worstPerBucket(phase: PhaseSeries, buckets: number): { atS: number; latenessMs: number }[] {
  const worst = new Array<number>(buckets).fill(-1);
  for (const s of phase.samples) {
    const b = Math.min(buckets - 1, Math.max(0, Math.floor((s.atS / phase.durationS) * buckets)));
    worst[b] = Math.max(worst[b]!, s.latenessMs);
  }
  return worst.flatMap((ms, b) =>
    ms < 0 ? [] : [{ atS: ((b + 0.5) * phase.durationS) / buckets, latenessMs: ms }]
  );
}

function label(ms: number): string {
  return ms >= 1 ? String(Math.round(ms)) : String(Number(ms.toPrecision(1)));
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}
