import busboy from 'busboy';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { type FileSyncs, fileSyncs } from '../../lifecycle/durable-files.js';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { SharedFileContents } from '../../storage/relay/shared-file-contents.js';
import { isDiskFull } from '../../storage/storage-faults.js';
import { RelayRefusal, invalidInputAt } from './relay-errors.js';
import { relayLimits } from '../../../wire/relay/relay-facts.js';
import { contentTypeWithoutCharset, formCharsetOf } from '../../../wire/form-fields.js';

/** A file received in full, hashed and stored under its SHA-256. */
export interface ReceivedFile {
  itemId: string;
  bytes: number;
  mediaType: string;
  /** The `title` form field, or the part's file name, or "". */
  title: string;
}

/** What an upload's check sees once the file is hashed, before it is moved into place. */
/**
 * What an upload is read from: a request's body stream with the two headers the store reads (Node's
 * `IncomingMessage` is one). The domain names no HTTP type: a route hands its request in as this.
 */
export interface UploadSource extends Readable {
  readonly headers: { readonly 'content-type'?: string | undefined; readonly 'content-length'?: string | undefined };
  /** True once the whole body has arrived; a 'close' before it means the client went away. */
  readonly complete: boolean;
}

export interface UploadCheck {
  itemId: string;
  /** The `title` field, else the part's file name, else "". */
  title: string;
  /** The part's Content-Type as `type/subtype` in lower case (busboy drops parameters); `text/plain` when the part has none (busboy, after RFC 7578). */
  mediaType: string;
  /** Every other text field of the form, by name (the last value wins). */
  fields: ReadonlyMap<string, string>;
}

/** Fields a multipart upload may carry besides its file (title, authorship, and room to grow), and their size. */
const MULTIPART_FIELDS_MAX = 4;
const MULTIPART_FIELD_MAX_BYTES = 4096;

/** Multipart overhead we tolerate above the file limit before refusing on Content-Length alone. */
const multipartSlackBytes = 64 * 1024;

/**
 * Content-addressed file storage under `dataDir/files`. Uploads are streamed: each chunk is
 * hashed and written to a temporary file as it arrives, never held whole in memory; the file is
 * renamed to its SHA-256 once complete, so a crash leaves only a `tmp-*` file behind and a stored
 * file is always complete. Its bytes are synced before the rename and the rename through the
 * directory after, before it counts as stored, so a power cut cannot leave a committed item
 * without its content (decision 0480). With `shared` contents (replicas on PostgreSQL), a file is put there
 * once it is in place and before its item can be stored, and the local directory is a cache of it:
 * a file another replica received is copied here on first use.
 */
export class FileStore {
  readonly dir: string;
  constructor(
    dataDir: string,
    private readonly shared?: SharedFileContents,
    private readonly syncs: FileSyncs = fileSyncs,
  ) {
    this.dir = join(dataDir, 'files');
    mkdirSync(this.dir, { recursive: true });
  }

  pathOf(itemId: string): string {
    return join(this.dir, itemId);
  }

  async has(itemId: string): Promise<boolean> {
    return existsSync(this.pathOf(itemId)) || ((await this.shared?.has(itemId)) ?? false);
  }

  async open(itemId: string): Promise<Readable> {
    await this.copyFromShared(itemId);
    return createReadStream(this.pathOf(itemId));
  }

  /** A file now in place here: every replica can read it (a no-op without shared contents). */
  private async publish(itemId: string): Promise<void> {
    await this.shared?.put(itemId, readFileSync(this.pathOf(itemId)));
  }

  /** Copies a file another replica received into the local directory, when it is not here yet. */
  private async copyFromShared(itemId: string): Promise<void> {
    if (!this.shared || existsSync(this.pathOf(itemId))) return;
    const content = await this.shared.get(itemId);
    if (content === undefined) return;
    // Written aside and renamed, as uploads are: a reader never sees half a file.
    const tmp = join(this.dir, `tmp-${randomBytes(8).toString('hex')}`);
    writeFileSync(tmp, content, { mode: 0o600 });
    renameSync(tmp, this.pathOf(itemId));
  }

  /**
   * Reads a multipart/form-data request with one `file` part (and an optional `title` field).
   * Refuses the upload (`file_too_large`) as soon as the file passes `fileMaxBytes`, and as input
   * when the part is missing.
   *
   * `check` validates the upload (its title, its other fields such as a signed authorship) before
   * the file is moved into place and returns (or settles with) the title to keep; when it throws or rejects, the temp file is
   * removed and its error is the answer, so a refused upload leaves nothing in the store (it used to
   * leave an orphan file: audit finding 4).
   */
  receiveMultipart(req: UploadSource, check: (upload: UploadCheck) => string | Promise<string> = (upload) => upload.title): Promise<ReceivedFile> {
    // Refused from the headers, before a byte is read (the error handler closes the connection).
    const refused = declaredUploadTooLarge(req) ?? unreadableForm(req.headers['content-type']);
    if (refused) return Promise.reject(refused);
    return new Promise<ReceivedFile>((resolve, reject) => {
      let bb: busboy.Busboy;
      try {
        // busboy signals 'limit' when a file *reaches* fileSize, so allow one byte more: reaching
        // fileMaxBytes + 1 is what makes an upload too large.
        // The form's charset as formCharsetOf reads it (busboy ignores a multipart form's own): the
        // default of parts declaring none.
        const contentType = req.headers['content-type'];
        const charset = formCharsetOf(contentType);
        bb = busboy({ headers: { 'content-type': contentType === undefined ? undefined : contentTypeWithoutCharset(contentType) }, defCharset: 'read' in charset ? charset.read : 'utf8', limits: { files: 1, fileSize: relayLimits.fileMaxBytes + 1, fields: MULTIPART_FIELDS_MAX, fieldSize: MULTIPART_FIELD_MAX_BYTES, parts: MULTIPART_FIELDS_MAX + 1 } });
      } catch (cause) {
        req.resume();
        reject(invalidInputAt(['header', 'content-type'], [{ path: [], code: 'not_multipart', note: (cause as Error).message, input: req.headers['content-type'] ?? null }]));
        return;
      }
      let title: string | undefined;
      const fields = new Map<string, string>();
      let filename = '';
      let settled = false;
      let current: Readable | undefined;
      let upload: Promise<{ itemId: string; bytes: number; mediaType: string; tmp: string }> | undefined;
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        req.unpipe(bb);
        // Discard the rest of the body instead of buffering it.
        req.resume();
        // The answer goes out only once the partial temp file is gone: the copy is ended here and
        // its pipeline removes the file when it settles, so nothing is left behind when the client
        // reads the error (and a crash after the answer cannot strand a file it was told failed).
        if (current && !current.destroyed) current.destroy(err instanceof Error ? err : new Error('upload failed'));
        const copy: Promise<{ tmp: string } | undefined> = upload ?? Promise.resolve(undefined);
        copy.then(
          (u) => {
            if (u) safeUnlink(u.tmp);
          },
          () => undefined,
        ).finally(() => reject(err));
      };
      bb.on('field', (name, value, info) => {
        // busboy cuts a long value, and skips parts past its limits, without failing: a form read
        // only in part is refused, not stored without what was cut (a dropped authorship left the
        // item unsigned with a 201).
        if (typeof (value as string | undefined) !== 'string') fail(unreadablePart(name));
        else if (info.valueTruncated) fail(invalidInputAt(['body', name], [{ path: [], code: 'form_field_too_big', limit: MULTIPART_FIELD_MAX_BYTES }]));
        else if (name === 'title') title = value;
        else fields.set(name, value);
      });
      bb.on('filesLimit', () => fail(invalidInputAt(['body', 'file'], [{ path: [], code: 'file_parts' }])));
      const tooManyParts = () => fail(invalidInputAt(['body'], [{ path: [], code: 'form_parts', limit: MULTIPART_FIELDS_MAX }]));
      bb.on('fieldsLimit', tooManyParts);
      bb.on('partsLimit', tooManyParts);
      bb.on('file', (name, stream, info) => {
        // busboy destroys the part being read with its error when the body ends inside it; an
        // 'error' nobody listens to is thrown and ends the whole process (issue 9). The parser
        // reports the same error, so this only has to be heard (the `file` part's copy below hears
        // it through its pipeline too).
        stream.on('error', (err: Error) => fail(malformed(err)));
        // After a refusal (a field cut before this part, in the same chunk) nobody would remove
        // its temp file: the parser is unpiped, so its 'close' never comes.
        if (name !== 'file' || settled) {
          stream.resume();
          return;
        }
        filename = info.filename ?? '';
        current = stream;
        const tmp = join(this.dir, `tmp-${randomBytes(8).toString('hex')}`);
        const hash = createHash('sha256');
        let bytes = 0;
        stream.on('data', (chunk: Buffer) => {
          hash.update(chunk);
          bytes += chunk.length;
        });
        stream.on('limit', () => {
          fail(tooLarge());
          // The rest of the request is discarded, so this part never ends by itself: end the copy
          // here, which rejects the pipeline below and removes the partial temp file.
          stream.destroy(tooLarge());
        });
        const out = createWriteStream(tmp, { mode: 0o600 });
        upload = pipeline(stream, out)
          // The bytes on disk before the file is renamed into place (and its item committed).
          .then(() => this.syncs.file(tmp))
          .then(() => ({ itemId: hash.digest('hex'), bytes, mediaType: info.mimeType, tmp }))
          .catch(async (err: unknown) => {
            // A write stream destroyed before its file was open still opens (creates) it and then
            // closes it: removing the file before that 'close' would let it reappear afterwards.
            if (!out.closed) await new Promise<void>((settle) => out.once('close', () => settle()));
            safeUnlink(tmp);
            throw err;
          });
        // After a failure nobody awaits the upload; its rejection is expected and already handled.
        upload.catch(() => undefined);
      });
      bb.on('error', (err: Error) => fail(malformed(err)));
      bb.on('close', () => {
        if (settled) return;
        if (!upload) {
          fail(invalidInputAt(['body', 'file'], [{ path: [], code: 'missing' }]));
          return;
        }
        upload.then(
          (u) => {
            if (settled) {
              safeUnlink(u.tmp);
              return;
            }
            Promise.resolve()
              .then(() => check({ itemId: u.itemId, title: title ?? filename, mediaType: u.mediaType, fields }))
              .then(
                (checked) => {
                  // The client went away while the check read the store: nothing is kept.
                  if (settled) {
                    safeUnlink(u.tmp);
                    return;
                  }
                  // Published before the answer, so the item (stored after this) is never without its content.
                  void this.putInPlace(u.tmp, u.itemId)
                    .then(() => this.publish(u.itemId))
                    .then(
                      () => {
                        settled = true;
                        resolve({ itemId: u.itemId, bytes: u.bytes, mediaType: u.mediaType, title: checked });
                      },
                      (err: unknown) => fail(err),
                    );
                },
                (err: unknown) => {
                  safeUnlink(u.tmp);
                  fail(err);
                },
              );
          },
          (err: unknown) => fail(err),
        );
      });
      // A request stream emits 'error' only to listeners; the 'close' below does the cleaning up.
      req.on('error', () => undefined);
      // A client that goes away mid-upload leaves no promise pending and no temp file behind.
      req.on('close', () => {
        if (req.complete || settled) return;
        fail(new RelayRefusal('upload_aborted', 'upload aborted by the client before it was complete'));
        current?.destroy(new Error('upload aborted'));
      });
      req.pipe(bb);
    });
  }

  /**
   * Stores a file fetched from a peer: streams it to a temp file, hashing, and keeps it only when
   * its SHA-256 equals `expectedId` and it fits the limit. Content that fails either check is
   * `{ ok: false, reason }` (the peer's word is wrong; fetching again will not help); a stream that
   * breaks off throws (the transfer failed; a later attempt may work). Nothing is left on disk
   * unless it is kept.
   */
  async receiveVerified(body: AsyncIterable<Uint8Array>, expectedId: string): Promise<{ ok: true; bytes: number } | { ok: false; reason: string }> {
    const tmp = join(this.dir, `tmp-${randomBytes(8).toString('hex')}`);
    const hash = createHash('sha256');
    let bytes = 0;
    const out = createWriteStream(tmp, { mode: 0o600 });
    // A write error (disk full) must fail this transfer, not the process: it is kept here and
    // thrown at the next write or at the end (a wait for 'drain' rejects on it), where the catch
    // below removes the temp file.
    let writeError: Error | undefined;
    out.on('error', (err) => {
      writeError = err;
    });
    const drop = () => {
      out.destroy();
      safeUnlink(tmp);
    };
    try {
      for await (const chunk of body) {
        bytes += chunk.length;
        if (bytes > relayLimits.fileMaxBytes) {
          drop();
          return { ok: false, reason: `file ${expectedId} is larger than ${relayLimits.fileMaxBytes} bytes` };
        }
        hash.update(chunk);
        if (writeError) throw writeError;
        if (!out.write(chunk)) await once(out, 'drain');
      }
      if (writeError) throw writeError;
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      const got = hash.digest('hex');
      if (got !== expectedId) {
        safeUnlink(tmp);
        return { ok: false, reason: `file content hashes to ${got}, not to its id ${expectedId}` };
      }
      await this.syncs.file(tmp);
      await this.putInPlace(tmp, expectedId);
      await this.publish(expectedId);
      return { ok: true, bytes };
    } catch (err) {
      drop();
      throw err;
    }
  }

  /**
   * Renames a complete, synced temp file to its id (or drops it when that file is here already) and
   * syncs the directory either way: a file found in place may be another copy's whose rename is
   * still being synced, and this copy's item must not be committed before that name is durable.
   */
  private async putInPlace(tmp: string, itemId: string): Promise<void> {
    if (existsSync(this.pathOf(itemId))) safeUnlink(tmp);
    else renameSync(tmp, this.pathOf(itemId));
    await this.syncs.dir(this.dir);
  }

  /** The file's size in bytes, copied here first when another replica received it. */
  async sizeOf(itemId: string): Promise<number> {
    await this.copyFromShared(itemId);
    return statSync(this.pathOf(itemId)).size;
  }

  /**
   * The size of the file when it is in this replica's directory, else undefined: for a step of a
   * transaction, which cannot wait for the shared contents (the caller copied it here before, `sizeOf`).
   */
  localSizeOf(itemId: string): number | undefined {
    try {
      return statSync(this.pathOf(itemId)).size;
    } catch {
      return undefined;
    }
  }
}

/**
 * The refusal of a multipart body that is not well-formed or ends early, in the bench's (Starlette's)
 * words; a part that could not be written because the disk is full is no fault of the body: that
 * error passes on as it is, and the error handler answers it 507.
 */
function malformed(err: Error): Error {
  if (isDiskFull(err)) return err;
  return new RelayRefusal('body_malformed', `There was an error parsing the body: ${err.message}`);
}

/** The refusal of an upload whose declared `Content-Length` is already far over the file limit; null otherwise. */
export function declaredUploadTooLarge(req: Pick<UploadSource, 'headers'>): RelayRefusal | null {
  const declared = Number(req.headers['content-length'] ?? NaN);
  return Number.isFinite(declared) && declared > relayLimits.fileMaxBytes + multipartSlackBytes ? tooLarge() : null;
}

function tooLarge(): RelayRefusal {
  return new RelayRefusal('file_too_large', `file larger than ${relayLimits.fileMaxBytes} bytes (the limit); nothing was stored`);
}

function safeUnlink(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone: the goal (no temp file left) is met.
  }
}

/**
 * A form declaring a charset the relay does not read (`formCharsetOf`: UTF-8, US-ASCII and
 * ISO-8859-1 it reads): refused, as busboy would read its parts as UTF-8 regardless.
 */
function unreadableForm(contentType: string | undefined): RelayRefusal | undefined {
  const charset = formCharsetOf(contentType);
  if (!('refused' in charset)) return undefined;
  return invalidInputAt(['header', 'content-type'], [{ path: [], code: 'not_multipart', note: `form text must be UTF-8, US-ASCII or ISO-8859-1, not charset ${JSON.stringify(charset.refused)}`, input: contentType ?? null }]);
}

/**
 * A text part in a charset busboy cannot decode (`utf-16`), which it hands on as undefined: read
 * as a field never sent, a title fell back to the file name and an authorship was dropped.
 */
function unreadablePart(name: string): RelayRefusal {
  return invalidInputAt(['body', name], [{ path: [], code: 'not_multipart', note: 'the part declares a charset the relay cannot read; send form text as UTF-8' }]);
}
