/**
 * Kubernetes resource quantities, as far as HAMi reads them: `resource.Quantity.AsInt64()`, which
 * succeeds only for integral values that fit in an int64 (`16Gi` does, `500m` and `1.5` do not).
 */

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/;
const DECIMAL_SUFFIX_EXPONENT: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX_SHIFT: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * What a quantity reads as: an integer (exact), a value that is not integral (`500m`, `1.5`), one beyond
 * int64, or text that is no quantity at all. `quantityAsInt64` and the request validation both read through it.
 */
export type QuantityReading =
  | { readonly kind: 'integer'; readonly value: bigint }
  | { readonly kind: 'fraction' }
  | { readonly kind: 'overflow' }
  | { readonly kind: 'invalid' };

export function readQuantity(value: string | number): QuantityReading {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return { kind: 'invalid' };
    if (!Number.isInteger(value)) return { kind: 'fraction' };
    return Number.isSafeInteger(value) ? { kind: 'integer', value: BigInt(value) } : { kind: 'overflow' };
  }
  const match = QUANTITY.exec(value.trim());
  if (!match) return { kind: 'invalid' };
  const [, sign = '', number = '', exponent, suffix] = match;
  const [wholeDigits = '', fractionDigits = ''] = number.split('.');
  let mantissa = BigInt(`${wholeDigits}${fractionDigits}` || '0');
  let decimalExponent = -fractionDigits.length;
  if (exponent !== undefined) decimalExponent += Number(exponent.slice(1));
  if (suffix !== undefined) {
    const shift = BINARY_SUFFIX_SHIFT[suffix];
    if (shift !== undefined) mantissa <<= BigInt(shift);
    else decimalExponent += DECIMAL_SUFFIX_EXPONENT[suffix] ?? 0;
  }
  if (decimalExponent > 40) return mantissa === 0n ? { kind: 'integer', value: 0n } : { kind: 'overflow' };
  if (decimalExponent >= 0) {
    mantissa *= 10n ** BigInt(decimalExponent);
  } else {
    const divisor = 10n ** BigInt(-decimalExponent);
    if (mantissa % divisor !== 0n) return { kind: 'fraction' };
    mantissa /= divisor;
  }
  if (sign === '-') mantissa = -mantissa;
  if (mantissa > INT64_MAX || mantissa < INT64_MIN) return { kind: 'overflow' };
  return { kind: 'integer', value: mantissa };
}

/**
 * The quantity's integer value, or undefined when `AsInt64` would fail (not a quantity, not
 * integral, or outside int64). Values beyond 2^53 lose precision as JS numbers; every caller
 * range-checks far below that.
 */
export function quantityAsInt64(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const reading = readQuantity(value);
  return reading.kind === 'integer' ? Number(reading.value) : undefined;
}

/** Go's `int32(x)` conversion of an int64: keeps the low 32 bits. */
export function toInt32(value: number): number {
  if (Number.isSafeInteger(value)) return Number(BigInt.asIntN(32, BigInt(value)));
  return value | 0;
}

export const INT32_MAX = 2147483647;

/**
 * A ledger sum as the engine's int32 arrays hold it: clamped, never wrapped. A sum past int32 (bookings adopted past
 * a card's capacity) then still reads as more than the card holds; wrapped, it could read as free memory or free
 * cores (docs/devices.md, "AWS Neuron": overlapping masks).
 */
export function saturatedInt32(value: number): number {
  return value > INT32_MAX ? INT32_MAX : value < -INT32_MAX - 1 ? -INT32_MAX - 1 : value;
}
