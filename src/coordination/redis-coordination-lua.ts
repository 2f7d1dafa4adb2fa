import { createHash } from 'node:crypto';

/*
 * The Lua scripts of the `redis` coordination backend (redis-coordination.ts), each run atomically on the server
 * by EVALSHA (loaded on NOSCRIPT).
 */

/*
 * Tokens are members `<process>|<generation>` of one sorted set scored by their expiry (the server's TIME, ms).
 * Every script first drops the expired members, so a dead process's token is free once its lease ran out; the
 * set itself expires with its last lease, so nothing outlives the leases. Scripts run atomically: the
 * count check and the add cannot interleave with another process's.
 */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/*
 * The set expires with its LAST lease (the highest score), never with the caller's TTL: processes of one pool with
 * different TTLs must not cut each other's leases short (a set expired early would hand out tokens still held).
 */
const EXPIRE_AT_LAST = `local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(last[2]))) end`;

/** KEYS: tokens, generation. ARGV: limit, ttl, process. → {1, generation} or {0, ms until the earliest expiry | -1}. */
export const ACQUIRE_LUA = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  local g = redis.call('INCR', KEYS[2])
  -- The counter outlives every lease by far (a day without grants), then goes too: no key is left for good.
  redis.call('PEXPIRE', KEYS[2], 86400000)
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3] .. '|' .. g)
  ${EXPIRE_AT_LAST}
  return {1, g}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if first[2] then return {0, tonumber(first[2]) - now} end
return {0, -1}`;

/** KEYS: tokens, wake channel. ARGV: member. */
export const RELEASE_LUA = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then redis.call('PUBLISH', KEYS[2], '1') end
return 0`;

/** KEYS: tokens. ARGV: ttl, members… → the members renewed (not expired, not reissued). */
export const RENEW_LUA = `${NOW}
local out = {}
for i = 2, #ARGV do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) > now then
    redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
    out[#out + 1] = ARGV[i]
  end
end
if #out > 0 then ${EXPIRE_AT_LAST} end
return out`;

/*
 * An endpoint's shared windows: one hash per quota, fields `r:<slot>` (requests) and `t:<slot>` (tokens), slots of
 * 1/60 of the window. A unit counts until its slot's end plus one window and one more slot (the call reaches the
 * provider a little after its permit), so at most 62 slots live and a take is O(1). The hash expires with its
 * last slot. KEYS: quota hash. ARGV: window ms, rpm | -1, tpm | -1, tokens.
 * → {1, slot, requests, tokens} (counts as strings: Lua numbers come back as integers) or {0, retry ms}.
 */
export const TAKE_RATE_LUA = `${NOW}
local w = tonumber(ARGV[1])
local rpm = tonumber(ARGV[2])
local tpm = tonumber(ARGV[3])
local cur = math.floor(now * 60 / w)
local all = redis.call('HGETALL', KEYS[1])
local slots, order, old = {}, {}, {}
local usedR, usedT = 0, 0
for i = 1, #all, 2 do
  local f = all[i]
  local s = tonumber(string.sub(f, 3))
  local v = tonumber(all[i + 1])
  if s < cur - 61 then
    old[#old + 1] = f
  else
    local e = slots[s]
    if not e then e = {0, 0} slots[s] = e order[#order + 1] = s end
    if string.sub(f, 1, 1) == 'r' then e[1] = e[1] + v usedR = usedR + v else e[2] = e[2] + v usedT = usedT + v end
  end
end
if #old > 0 then redis.call('HDEL', KEYS[1], unpack(old)) end
local costR, costT, needR, needT = 0, 0, 0, 0
if rpm >= 0 then costR = math.min(1, rpm) needR = usedR + costR - rpm end
if tpm >= 0 then costT = math.min(math.max(tonumber(ARGV[4]), 0), tpm) needT = usedT + costT - tpm end
if needR <= 1e-9 and needT <= 1e-9 then
  if costR > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 'r:' .. cur, costR) end
  if costT > 0 then redis.call('HINCRBYFLOAT', KEYS[1], 't:' .. cur, costT) end
  redis.call('PEXPIRE', KEYS[1], math.ceil((cur + 62) * w / 60 - now) + 1)
  return {1, cur, tostring(costR), tostring(costT)}
end
table.sort(order)
local fr, ft = 0, 0
for _, s in ipairs(order) do
  fr = fr + slots[s][1]
  ft = ft + slots[s][2]
  if fr >= needR - 1e-9 and ft >= needT - 1e-9 then return {0, math.max(1, math.ceil((s + 62) * w / 60 - now))} end
end
return {0, math.ceil(w)}`;

/** KEYS: quota hash. ARGV: slot, requests, tokens. A slot already gone (left the window) is not brought back. */
export const REFUND_RATE_LUA = `
for i, f in ipairs({'r:' .. ARGV[1], 't:' .. ARGV[1]}) do
  local v = redis.call('HGET', KEYS[1], f)
  if v then
    local left = tonumber(v) - tonumber(ARGV[i + 1])
    if left <= 1e-9 then redis.call('HDEL', KEYS[1], f) else redis.call('HSET', KEYS[1], f, tostring(left)) end
  end
end
return 0`;

/** KEYS: probe claim. ARGV: process, ttl. A free or expired claim, or this process's own, is (re)taken. */
export const CLAIM_PROBE_LUA = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

/** KEYS: probe claim, wake channel. ARGV: process. Only the holder's own claim is given back; waiters are woken. */
export const END_PROBE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[2], '1')
end
return 0`;

/** KEYS: health hash, health channel. ARGV: endpoint, facts JSON, message JSON, keep ms. */
export const PUBLISH_LUA = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local keep = tonumber(ARGV[4])
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
redis.call('PUBLISH', KEYS[2], ARGV[3])
return 0`;

const shas = new Map<string, string>();
/** A script's SHA-1 (EVALSHA's name for it), computed once per script. */
export const sha = (s: string) => {
  let h = shas.get(s);
  if (!h) {
    h = createHash('sha1').update(s).digest('hex');
    shas.set(s, h);
  }
  return h;
};
