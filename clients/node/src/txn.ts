// SPDX-License-Identifier: Apache-2.0
/**
 * TXN (docs/protocol.md "TXN"): compares, then all of one branch's writes in one log entry,
 * or none. A Txn is a builder (Client.txn(), Session.txn()): each method appends one compare
 * or op, in the order given, and returns the builder; commit() sends the whole TXN once.
 * Through a session it carries REQ sid seq and is resent until its outcome is known, applying
 * once, as the session's other writes; without one it is sent once (a lost answer is
 * OutcomeUnknownError). Committing a builder again is a new request.
 */
import { Cmd } from './conn';
import { ProtocolError } from './errors';

/** A compare's relation. ifValue and ifToken take '=' and '!=' only (the servers refuse the
 * others with a ServerError). */
export type TxnRel = '=' | '!=' | '<' | '>';

const RELS: readonly string[] = ['=', '!=', '<', '>'];

/**
 * A committed TXN's outcome: `succeeded` when THEN ran (every compare held, or none was
 * given), else ELSE ran; `revision` the store's revision after the TXN (unchanged when the
 * branch changed nothing); `results` one number per op of the branch that ran, in order: a
 * put's revision (the key's new mod_rev), a del's count (0 or 1), an incr's new value; null for
 * a resend answered by a node that got the session's request table from a snapshot (the
 * branch and revision are still the first ones).
 */
export interface TxnResult {
  succeeded: boolean;
  revision: number;
  results: number[] | null;
}

type Arg = string | number | Buffer;

export class Txn {
  private readonly ifs: Arg[] = [];
  private readonly thenOps: Arg[] = [];
  private readonly elseOps: Arg[] = [];
  private fenceArgs: Arg[] = [];
  private items = 0;

  /** @internal Client.txn() and Session.txn() make it; send carries the command. */
  constructor(private readonly send: (cmd: Cmd) => Promise<unknown>) {}

  private cmp(...args: Arg[]): this {
    this.ifs.push('IF', ...args);
    this.items++;
    return this;
  }

  private static rel(r: TxnRel): TxnRel {
    if (!RELS.includes(r)) throw new TypeError(`txn: relation ${String(r)} is none of =, !=, <, >`);
    return r;
  }

  private static int(n: number, what: string): number {
    if (!Number.isSafeInteger(n)) throw new TypeError(`txn: ${what} must be a safe integer, not ${n}`);
    return n;
  }

  /** The key's mod revision (0 for an absent key) compared with rev. */
  ifRev(key: string, rel: TxnRel, rev: number): this {
    return this.cmp('REV', key, Txn.rel(rel), Txn.int(rev, 'rev'));
  }

  /** The key's value '=' or '!=' value (an absent key has none: '=' false, '!=' true). */
  ifValue(key: string, rel: TxnRel, value: string | Buffer): this {
    return this.cmp('VALUE', key, Txn.rel(rel), value);
  }

  ifExists(key: string): this {
    return this.cmp('EXISTS', key);
  }

  ifMissing(key: string): this {
    return this.cmp('MISSING', key);
  }

  /** token is ('=') or is not ('!=') a current token of lock (FENCE's rule). */
  ifToken(lock: string, rel: TxnRel, token: number): this {
    return this.cmp('TOKEN', lock, Txn.rel(rel), Txn.int(token, 'token'));
  }

  /** Session sid holds lock (exclusively, shared or a permit): the ownership guard. */
  ifHolds(lock: string, sid: number): this {
    return this.cmp('HOLDS', lock, Txn.int(sid, 'sid'));
  }

  private op(els: boolean, ...args: Arg[]): this {
    (els ? this.elseOps : this.thenOps).push(...args);
    this.items++;
    return this;
  }

  /** PUT when THEN runs (as put() without options: a lease the key had is dropped). */
  thenPut(key: string, value: string | Buffer): this {
    return this.op(false, 'PUT', key, value);
  }

  thenDel(key: string): this {
    return this.op(false, 'DEL', key);
  }

  /** INCR key BY by when THEN runs; its result is the new value. */
  thenIncr(key: string, by = 1): this {
    return this.op(false, 'INCR', key, Txn.int(by, 'by'));
  }

  elsePut(key: string, value: string | Buffer): this {
    return this.op(true, 'PUT', key, value);
  }

  elseDel(key: string): this {
    return this.op(true, 'DEL', key);
  }

  elseIncr(key: string, by = 1): this {
    return this.op(true, 'INCR', key, Txn.int(by, 'by'));
  }

  /** FENCE lock token on the whole TXN: StaleError at commit, nothing applied, unless current. */
  fence(lock: string, token: number): this {
    this.fenceArgs = ['FENCE', lock, Txn.int(token, 'token')];
    return this;
  }

  /** The TXN command's arguments, without REQ (a session's send adds it). */
  args(): Arg[] {
    const a: Arg[] = ['TXN', ...this.ifs, 'THEN', ...this.thenOps];
    if (this.elseOps.length) a.push('ELSE', ...this.elseOps);
    return a.concat(this.fenceArgs);
  }

  /**
   * Send it. Refusals (nothing applied): StaleError (a stale fence), TooLargeError (more
   * compares and ops, or bytes, than the servers take), NoSpaceError, PermissionError,
   * TxnOpError (an op that cannot apply), ServerError (a malformed TXN: a key written twice in
   * one branch, a relation the compare does not take); and every write's errors.
   */
  async commit(): Promise<TxnResult> {
    if (this.items === 0) throw new TypeError('txn: no compare and no op');
    return txnResult(await this.send(new Cmd(...this.args())));
  }
}

/** [THEN|ELSE, revision, [result, ...] | null] as a TxnResult. */
export function txnResult(r: unknown): TxnResult {
  if (!Array.isArray(r) || r.length !== 3) throw new ProtocolError(`TXN: a reply of an unexpected shape: ${String(r)}`);
  const branch = String(r[0]);
  if ((branch !== 'THEN' && branch !== 'ELSE') || !Number.isInteger(Number(r[1])))
    throw new ProtocolError(`TXN: a reply of an unexpected shape: ${String(r)}`);
  if (r[2] !== null && !Array.isArray(r[2])) throw new ProtocolError('TXN: results are not a list');
  const results = r[2] === null ? null : (r[2] as unknown[]).map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n)) throw new ProtocolError(`TXN: a result that is no integer: ${String(x)}`);
    return n;
  });
  return { succeeded: branch === 'THEN', revision: Number(r[1]), results };
}
