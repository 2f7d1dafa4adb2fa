/**
 * The most store connections each process of a workers run opens (`run --workers N`'s parent and each worker).
 *
 * Why not the one-process default of 10: the processes of a run share one server's `max_connections` (100 on a
 * stock PostgreSQL), and each also holds its coordination connections (up to 5) and its LISTEN connections (2).
 * With 10 store connections each, 8 workers could ask for more than a stock server gives, and a worker refused a
 * connection ("too many clients already") fails closed. A worker's store work is a few short statements per turn
 * (stage, events, heartbeat); 4 connections serve it without waiting, measured with 3 workers at concurrency 3.
 */
export const WORKER_STORE_POOL_SIZE = 4;
