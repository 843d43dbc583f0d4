import { ApprovalsError } from './errors.ts';

/** WebCrypto, which every supported runtime has as `globalThis.crypto` (Node.js 18 only behind a flag). */
export function subtle(): SubtleCrypto {
  const found = (globalThis as { crypto?: Crypto }).crypto?.subtle;
  if (!found) {
    throw new ApprovalsError(
      'WebCrypto is not available here (on Node.js 18, run with --experimental-global-webcrypto)',
    );
  }
  return found;
}
