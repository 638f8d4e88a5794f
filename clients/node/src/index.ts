// SPDX-License-Identifier: Apache-2.0
/**
 * fencelock for Node.js: the public API. Client (client.ts), Session and Hold (session.ts),
 * Watcher (watch.ts), the typed errors (errors.ts). The contract: docs/clients.md.
 */
export {
  Client,
  type ClientOptions,
  type HistoryEntry,
  type KeyValue,
  type LatchInfo,
  type LeaderInfo,
  type LockState,
  type WriteOptions,
} from './client';
export { now, type TlsOptions } from './conn';
export * from './errors';
export {
  Hold,
  MultiHold,
  Session,
  type Fence,
  type LockOptions,
  type MultiLockOptions,
  type Revoke,
  type RevokeWatch,
  type SemOptions,
  type SessionOptions,
  type WaitOptions,
  type Waiter,
  type WaiterWatch,
} from './session';
export { Txn, type TxnRel, type TxnResult } from './txn';
export { Watcher, type WatchEvent, type WatchOptions } from './watch';

/** The package's version (package.json's). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const VERSION: string = require('../package.json').version;
