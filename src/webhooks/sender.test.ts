import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sendWebhook } from './sender.ts';

test('a webhook to a literal internal address is refused before connecting', async () => {
  for (const host of ['[::ffff:0:7f00:1]', '[::127.0.0.1]', '[2002:7f00:1::]', '[fec0::1]']) {
    const result = await sendWebhook(`http://${host}:9/hook`, {}, '{}', { allowPrivate: false });
    assert.deepEqual(result, { statusCode: null, error: 'internal address refused' }, host);
  }
});
