/** A read position in msgpack bytes, with the big-endian reads every decoder of the package
 * makes (values, the command line's re-encoding). Each decoder says what running past the
 * end means for it: `cutShort`. */
export abstract class ByteCursor {
  protected readonly view: DataView;

  constructor(
    protected readonly b: Uint8Array,
    /** The next byte to read. */
    public at = 0,
    /** Where the bytes this cursor may read end. */
    protected readonly end = b.length,
  ) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  /** Raise: `n` bytes are wanted at `at`, past `end`. */
  protected abstract cutShort(n: number): never;

  protected need(n: number): void {
    if (this.at + n > this.end) this.cutShort(n);
  }

  protected u8(): number {
    this.need(1);
    return this.b[this.at++];
  }

  protected u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.at);
    this.at += 2;
    return v;
  }

  protected u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.at);
    this.at += 4;
    return v;
  }

  /** The next `n` bytes, as a view. */
  protected take(n: number): Uint8Array {
    this.need(n);
    const v = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return v;
  }
}
