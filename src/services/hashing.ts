import { hash, timingSafeEqual } from 'node:crypto';

/** One call, no Hash object: about twice as fast as createHash for an evidence entry's few hundred bytes. */
export const sha256Hex = (text: string) => hash('sha256', text, 'hex');

export function equalInConstantTime(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
