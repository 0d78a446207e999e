/** Bytes from a hex string (whitespace ignored), for fixtures of bytes a real client or broker wrote. */
export function hexBytes(hex: string): Uint8Array {
  const digits = hex.replace(/\s+/g, "");
  if (!/^([0-9a-f]{2})*$/i.test(digits)) throw new Error(`Cannot read hex fixture: ${digits.slice(0, 40)}…`);
  return Uint8Array.from(digits.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}
