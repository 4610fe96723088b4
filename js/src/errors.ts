/**
 * The errors a reader raises, mirroring the Python package's `msglc.errors`: one base class,
 * `MsglcError`, for "these bytes are not a readable archive", and a subclass for each cause.
 * Missing keys and indices are not archive faults: they get `KeyNotFoundError` and
 * `IndexOutOfRangeError`, each naming the path.
 */

/** Base class: the bytes given are not a readable msglc archive. */
export class MsglcError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The bytes do not start with the msglc magic. */
export class NotAnArchiveError extends MsglcError {}

/** A format version (or node type, filter, extension) this reader does not know. */
export class UnsupportedVersionError extends MsglcError {}

/** The archive ends before a part it names: cut short. */
export class TruncatedError extends MsglcError {}

/** A checksum does not hold, or an offset, length or structure is impossible. */
export class CorruptedError extends MsglcError {}

/** The file or object changed since the reader opened it: reopen it. */
export class ArchiveChangedError extends MsglcError {}

/** A dict has no such key (Python's `KeyError`). */
export class KeyNotFoundError extends Error {
  readonly key: unknown;
  readonly path: string;
  constructor(key: unknown, path: string) {
    super(`no key ${JSON.stringify(typeof key === "bigint" ? key.toString() : key)} at ${path || "the root"}`);
    this.name = "KeyNotFoundError";
    this.key = key;
    this.path = path;
  }
}

/** A list index out of range (Python's `IndexError`). */
export class IndexOutOfRangeError extends RangeError {
  readonly index: number;
  readonly path: string;
  constructor(index: number, length: number, path: string) {
    super(`index ${index} out of range for a list of ${length} at ${path || "the root"}`);
    this.name = "IndexOutOfRangeError";
    this.index = index;
    this.path = path;
  }
}
