// SPDX-License-Identifier: Apache-2.0
/**
 * The errors of the fencelock client: one class per error word of the protocol
 * (docs/protocol.md "Errors") and per outcome of the client contract (docs/clients.md).
 * Every class derives from FencelockError and carries `word`, the contract's error word
 * (tests/conformance/PROTOCOL.md "Error words"), so code can switch on either the class or
 * the word. fromReply() maps a server's error reply: its first word names the class, the rest
 * is the server's message, kept as the error's message.
 */

/** Base class: anything the package throws on purpose. */
export class FencelockError extends Error {
  /** The contract's error word (TIMEOUT, BUSY, UNAVAILABLE, UNKNOWN, SESSION, ...). */
  readonly word: string = 'OTHER';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A lock, permit or candidacy was not granted within the wait (the session left the queue). */
export class LockTimeoutError extends FencelockError {
  override readonly word = 'TIMEOUT';
}

/** A try (wait 0) found the lock held by another session or in lock-delay. */
export class BusyError extends FencelockError {
  override readonly word = 'BUSY';
}

/** No leader was reached before the call's deadline; a call through a session applied nothing. */
export class UnavailableError extends FencelockError {
  override readonly word: string = 'UNAVAILABLE';
}

/** The TLS handshake failed (an untrusted certificate, a wrong name), until the deadline. */
export class TlsError extends UnavailableError {
  override readonly word = 'TLS';
}

/**
 * The outcome of a write is unknown: it may have applied. A write without a session is sent
 * once and ends here when its answer is lost; a write through a session is resent with its
 * `REQ sid seq` and ends here only when its deadline passed without an answer.
 */
export class OutcomeUnknownError extends FencelockError {
  override readonly word = 'UNKNOWN';
}

/** The session is lost, closed, expired or unknown to the servers (-NOSESSION). */
export class SessionLostError extends FencelockError {
  override readonly word = 'SESSION';
}

/** UNLOCK / SEM.RELEASE / ELECT.RESIGN by a session that neither holds nor waits. */
export class NotHolderError extends FencelockError {
  override readonly word = 'NOTHOLDER';
}

/** A fenced write, FENCE.CHECK or ELECT.PROCLAIM with a token that is not the current one. */
export class StaleError extends FencelockError {
  override readonly word = 'STALE';
}

/** An IFREV condition did not hold; nothing changed. */
export class IfRevError extends FencelockError {
  override readonly word = 'IFREV';
}

/** No such key; no leader of that election. */
export class NotFoundError extends FencelockError {
  override readonly word = 'NOTFOUND';
}

/** A server quota is full (-NOSPACE); nothing applied. */
export class NoSpaceError extends FencelockError {
  override readonly word = 'NOSPACE';
}

/** -NOPERM: the user may not run that command or name that key, lock or session. */
export class PermissionError extends FencelockError {
  override readonly word = 'PERM';
}

/** -WRONGTYPE: the name is a lock, semaphore or election of another kind. */
export class WrongTypeError extends FencelockError {
  override readonly word = 'WRONGTYPE';
}

/** -WRONGPASS / -NOAUTH: credentials refused or missing. Never retried. */
export class AuthError extends FencelockError {
  override readonly word = 'AUTH';
}

/**
 * -DEADLOCK: the wait would have closed a cycle of sessions waiting for each other. It was
 * refused and not queued; the session keeps what it holds and the other waits are untouched:
 * release something and retry. `cycle` is the server's text, "cycle of 2: 5 -a-> 7 -b-> 5"
 * (session 5 waits for lock a, which session 7 holds or is queued for first, ...).
 */
export class DeadlockError extends FencelockError {
  override readonly word = 'DEADLOCK';
  get cycle(): string {
    return this.message.replace(/^DEADLOCK /, '');
  }
}

/**
 * -BROKEN: a latch a joined session can no longer count down (its session ended before it
 * did), or a barrier a session ended inside (the message names both). Every waiter and every
 * later step gets it until the latch or barrier is deleted (Client.latchDelete): nobody waits
 * forever for a participant that is gone.
 */
export class BrokenError extends FencelockError {
  override readonly word = 'BROKEN';
}

/**
 * -TOOLARGE: a key, name or value over the server's limit; a TXN of more compares and ops, or
 * bytes, than the servers take (--max-txn-ops, --max-txn-bytes).
 */
export class TooLargeError extends FencelockError {
  override readonly word = 'TOOLARGE';
}

/** Any other error reply (-ERR ...). */
export class ServerError extends FencelockError {}

/**
 * -ERR TXN op N: ...: an op of the TXN's branch that ran cannot apply (an INCR of a value that
 * is not a counter, or one that would overflow); `op` is its place in the branch (1 = the
 * first). Nothing of the TXN applied. A ServerError as well.
 */
export class TxnOpError extends ServerError {
  readonly op: number;
  constructor(message: string, op: number) {
    super(message);
    this.op = op;
  }
}

/** A reply of a shape the client does not expect. */
export class ProtocolError extends FencelockError {}

/** The caller's AbortSignal cancelled the call (a wait left the queue on the servers). */
export class AbortError extends FencelockError {}

/**
 * -COMPACTED: the events after the id asked for are no longer retained. `oldest` is the oldest
 * retained id; `after` the id just before it: reload the state, then watch from `after`. Not
 * from "0": the next read may go to a new leader that retains more history, and "0" there would
 * start before what was handed out.
 */
export class CompactedError extends FencelockError {
  override readonly word = 'COMPACTED';
  constructor(
    message: string,
    readonly oldest: string,
  ) {
    super(message);
  }

  /** The id just before `oldest` ("" if the server named none). */
  get after(): string {
    const m = /^(\d+)(?:-(\d+))?$/.exec(this.oldest);
    if (!m) return '';
    const rev = BigInt(m[1]);
    const n = BigInt(m[2] ?? '0');
    if (n > 0n) return `${rev}-${n - 1n}`;
    return rev > 0n ? `${rev - 1n}-18446744073709551615` : '0-0';
  }
}

const WORDS: Record<string, new (message: string) => FencelockError> = {
  NOSESSION: SessionLostError,
  NOTHOLDER: NotHolderError,
  STALE: StaleError,
  IFREV: IfRevError,
  TOOLARGE: TooLargeError,
  NOSPACE: NoSpaceError,
  WRONGPASS: AuthError,
  NOAUTH: AuthError,
  NOPERM: PermissionError,
  WRONGTYPE: WrongTypeError,
  UNKNOWN: OutcomeUnknownError,
  DEADLOCK: DeadlockError,
  BROKEN: BrokenError,
};

/** The error for one error reply's text ("STALE token 5 is not ..."). */
export function fromReply(text: string): FencelockError {
  const word = text.split(' ', 1)[0];
  if (word === 'COMPACTED') {
    const m = /oldest=(\d+-\d+)/.exec(text);
    return new CompactedError(text, m ? m[1] : '');
  }
  const op = /^ERR TXN op (\d+):/.exec(text);
  // ops count from 1 (Go's, Java's, Python's and C's parsers refuse an op 0 too)
  if (op && Number(op[1]) >= 1) return new TxnOpError(text, Number(op[1]));
  const Cls = WORDS[word] ?? ServerError;
  return new Cls(text);
}
