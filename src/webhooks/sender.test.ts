import assert from 'node:assert/strict';
import { test } from 'node:test';
import { webhookSender } from './sender.ts';

test('a webhook to a literal internal address is refused before connecting', async () => {
  const sender = webhookSender({ allowPrivate: false });
  for (const host of ['[::ffff:0:7f00:1]', '[::127.0.0.1]', '[2002:7f00:1::]', '[fec0::1]']) {
    const result = await sender.send(`http://${host}:9/hook`, {}, '{}');
    assert.deepEqual(result, { statusCode: null, error: 'internal address refused' }, host);
  }
  await sender.close();
});
