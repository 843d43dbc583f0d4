/**
 * Each page's own content stream, and their compression through one zlib stream off the main thread.
 */
import { constants, createDeflateRaw, type DeflateRaw, type ZlibOptions } from 'node:zlib';
import { Content } from './content.ts';
import type { Doc, Ref } from './style.ts';

/** Adler-32 of `bytes`: the checksum at the end of a zlib stream. */
function adler32(bytes: Uint8Array): number {
  let a = 1;
  let b = 0;
  // 5552 bytes at most between the reductions, as zlib does: the sums stay exact integers.
  for (let start = 0; start < bytes.length; start += 5552) {
    const end = Math.min(start + 5552, bytes.length);
    for (let index = start; index < end; index++) {
      a += bytes[index]!;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return b * 65536 + a;
}

/** A zlib header (deflate, 32 KiB window, fastest) and a last, empty, block. */
const ZLIB_HEADER = Buffer.from([0x78, 0x01]);
const LAST_BLOCK = Buffer.from([0x03, 0x00]);

/**
 * Compresses a document's page streams, one after the other, through one zlib stream at level 1 (in
 * Node's thread pool). Each page is a segment ended by a full flush, which needs nothing before it
 * to be read: with a header, a last empty block and its own checksum it is a zlib stream of its own,
 * as a PDF stream wants. `deflateSync` per page (as pdfkit does) makes a zlib object per page, which
 * lives on until a full collection; 3,300 of them made the heap grow by another 65 MiB.
 */
class Compressor {
  private readonly zlib: DeflateRaw;
  private queue: Promise<void> = Promise.resolve();
  /** Pages given and not yet written. */
  pending = 0;

  constructor(onError: (error: Error) => void) {
    // Every write ends with a full flush; the output is read in full after each, so the stream is
    // never held back for want of a reader.
    const options: ZlibOptions & { readableHighWaterMark: number } = {
      level: 1,
      flush: constants.Z_FULL_FLUSH,
      readableHighWaterMark: 1 << 30,
    };
    this.zlib = createDeflateRaw(options);
    this.zlib.on('error', onError);
  }

  /** Compresses `bytes` into the stream `ref` after those before; then calls `done`. */
  add(bytes: Buffer, ref: Ref, done: () => void) {
    this.pending += 1;
    this.queue = this.queue.then(
      () =>
        new Promise<void>((resolve) => {
          this.zlib.write(bytes, () => {
            // All the stream holds is this page's: the next page is written only after this.
            const segment = this.zlib.read() as Buffer | null;
            if (!this.zlib.destroyed) {
              const checksum = Buffer.alloc(4);
              checksum.writeUInt32BE(adler32(bytes));
              const parts = [ZLIB_HEADER, ...(segment ? [segment] : []), LAST_BLOCK, checksum];
              ref.end(Buffer.concat(parts));
            }
            this.pending -= 1;
            done();
            resolve();
          });
        }),
    );
  }

  /** Resolves once every page given so far is written. */
  idle(): Promise<void> {
    return this.queue;
  }

  close() {
    this.zlib.destroy();
  }
}

/** A document's own content streams: the current page's, and the compression of the others. */
interface PageStream {
  ref: Ref | null;
  content: Content;
  /** Contents whose pages are written, for the next pages. */
  free: Content[];
  compressor: Compressor;
  /** The current page's dictionary. */
  page: Ref | null;
}

const pageStreams = new WeakMap<Doc, PageStream>();
/** Where the tables draw on the current page. */
export const pageContent = (doc: Doc) => pageStreams.get(doc)!.content;
/** Pages a document may have waiting for the compressor, each with its content (some 100 KiB). */
const MAX_WAITING = 4;

/**
 * Lets the compressor keep up with `doc`, at each new page. zlib hands back its work, and is given
 * the next page, only in a turn of the event loop: one turn here has the page before compressed in
 * the thread pool while this one is laid out. With MAX_WAITING pages waiting, it waits for them.
 */
export async function compressorCaughtUp(doc: Doc) {
  const compressor = pageStreams.get(doc)?.compressor;
  if (!compressor || compressor.pending === 0) return;
  if (compressor.pending >= MAX_WAITING) await compressor.idle();
  else await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Starts the current page's own content stream, after pdfkit's (a page's streams are read as one, so
 * it draws in pdfkit's coordinates), compressed by the document's Compressor rather than by pdfkit,
 * which makes a zlib object per stream, at zlib's default level (three times as slow for a table's
 * text, and hardly smaller).
 */
export function startPageStream(doc: Doc): Content {
  const ref = doc.ref({ Filter: 'FlateDecode' });
  const page = doc.page.dictionary.data as unknown as { Contents: Ref | Ref[] };
  page.Contents = [page.Contents, ref].flat();
  let stream = pageStreams.get(doc);
  if (!stream) {
    const compressor = new Compressor((error) => doc.destroy(error));
    doc.once('close', () => compressor.close());
    stream = { ref: null, content: new Content(), free: [], compressor, page: null };
    pageStreams.set(doc, stream);
  }
  if (stream.page) {
    // pdfkit has written the page before as this one started, and keeps its dictionary only for its
    // reference in the page tree ("12 0 R"). Its contents, a few objects per page, would stay until
    // the end of the document, and add to what each young-generation collection keeps.
    (stream.page as { data: object }).data = {};
  }
  stream.page = doc.page.dictionary;
  stream.ref = ref;
  stream.content = stream.free.pop() ?? new Content();
  stream.content.reset();
  return stream.content;
}

/**
 * Hands the page's own stream to the compressor. A stream may be written after its page: objects are
 * found through the cross-reference table, and pdfkit finishes the file once every one is written.
 */
export function endPageStream(doc: Doc) {
  const stream = pageStreams.get(doc);
  if (!stream?.ref) return;
  const { content } = stream;
  stream.compressor.add(content.bytes(), stream.ref, () => stream.free.push(content));
  stream.ref = null;
}

/** Ends the document: the last page's stream, then pdfkit's end. */
export function endDocument(doc: Doc) {
  endPageStream(doc);
  doc.end();
}
