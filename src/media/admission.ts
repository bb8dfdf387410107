/**
 * Bounds the bytes of media request bodies held in memory at once, across all requests. A body
 * counts from the moment it is admitted (its Content-Length, or the route's body limit when the
 * length is not declared) until its request ends. Past MEDIA_INFLIGHT_MAX_BYTES a request is
 * refused at once with 503 and `retryAfter` instead of being read; a request alone is always
 * admitted, so a single body up to the body limit still goes through.
 */
export class MediaAdmission {
  private inFlight = 0;

  constructor(
    private readonly maxBytes: number,
    /** Seconds a refused client is told to wait. */
    readonly retryAfterSeconds = 1,
  ) {}

  /** Reserves `bytes`; false when that would pass the budget. */
  tryAdmit(bytes: number): boolean {
    if (this.inFlight > 0 && this.inFlight + bytes > this.maxBytes) return false;
    this.inFlight += bytes;
    return true;
  }

  release(bytes: number): void {
    this.inFlight = Math.max(0, this.inFlight - bytes);
  }

  /** Bytes of media bodies admitted and not yet released. */
  get bytes(): number {
    return this.inFlight;
  }
}
