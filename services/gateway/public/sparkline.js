// A tiny SVG sparkline: one polyline scaled to the box. No library, no
// canvas: it stays crisp at any zoom and costs one attribute write per frame.

export const SPARK_WIDTH = 100
export const SPARK_HEIGHT = 24
const PAD = 2

/**
 * @param {readonly number[]} values oldest first
 * @returns {string} the `points` attribute of a polyline in a 100 x 24 viewBox
 */
export function sparkPoints (values) {
  if (values.length === 0) return ''
  let min = Infinity
  let max = -Infinity
  for (const v of values) {
    if (v < min) min = v
    if (v > max) max = v
  }
  const span = max - min
  const stepX = values.length > 1 ? SPARK_WIDTH / (values.length - 1) : 0
  const h = SPARK_HEIGHT - 2 * PAD
  return values.map((v, i) => {
    // A flat series draws a line through the middle.
    const y = span === 0 ? SPARK_HEIGHT / 2 : PAD + h - ((v - min) / span) * h
    return `${(i * stepX).toFixed(1)},${y.toFixed(1)}`
  }).join(' ')
}
