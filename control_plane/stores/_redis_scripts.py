"""Lua for the Redis control store's atomic operations (one script per operation).

Every script touches only keys that share the store's hash tag, so it runs on Redis Cluster too;
scripts that follow links between records (a key's children) build those names from the store's
base, which carries the tag.
Absent hash fields read as ``false`` in Lua; optional times are stored as ``''`` when unset.

A script that changes what the control loop reads every round (the desired books) also sets that
read's generation key to the fresh token the caller passes, in the same atomic step; one that
turns out to change nothing (an unknown tenant, a refused put, a delete of nothing) leaves it.
"""

from __future__ import annotations

# KEYS: tenant hash, names hash, tenants zset. ARGV: id, name key, created_at, field/value pairs...
# Returns 0 when the name is taken.
CREATE_TENANT = """
if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
return 1
"""

# KEYS: tenant hash, names hash, desired generation. ARGV: id, new name key, generation token,
# field/value pairs... Returns 0 for an unknown tenant, -1 when the new name belongs to another
# tenant.
UPDATE_TENANT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local old = redis.call('HGET', KEYS[1], 'name_key')
if old ~= ARGV[2] then
  local owner = redis.call('HGET', KEYS[2], ARGV[2])
  if owner and owner ~= ARGV[1] then return -1 end
  if old then redis.call('HDEL', KEYS[2], old) end
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('SET', KEYS[3], ARGV[3])
return 1
"""

# KEYS: tenant hash, tenant's subscriptions hash, books set, desired generation, then one
# subscribers hash per book.
# ARGV: tenant id, then per book: book id, the wish ("replicas:depth"), created_at; last the
# generation token. created_at
# stays last in the subscription's value, so that values written before depth existed are read
# the same way. The markets the call would add are counted against max_markets once, before
# anything is written: all of them fit, or nothing changes.
# Returns {1, created 1|0, created_at, ...} per book, {-1} unknown tenant, or
# {-2, markets it would add, markets the tenant may still add} when max_markets is in the way.
PUT_SUBSCRIPTIONS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local books = #KEYS - 4
local adding = 0
for i = 1, books do
  if redis.call('HEXISTS', KEYS[2], ARGV[3 * i - 1]) == 0 then adding = adding + 1 end
end
if adding > 0 then
  local room = tonumber(redis.call('HGET', KEYS[1], 'max_markets')) - redis.call('HLEN', KEYS[2])
  if adding > room then return {-2, adding, math.max(room, 0)} end
end
local reply = {1}
for i = 1, books do
  local ref, wish, created_at = ARGV[3 * i - 1], ARGV[3 * i], ARGV[3 * i + 1]
  local existing = redis.call('HGET', KEYS[2], ref)
  local created = 1
  if existing then
    created_at = string.match(existing, ':(%d+)$')
    created = 0
  end
  redis.call('HSET', KEYS[2], ref, wish .. ':' .. created_at)
  redis.call('HSET', KEYS[4 + i], ARGV[1], wish)
  redis.call('SADD', KEYS[3], ref)
  reply[#reply + 1] = created
  reply[#reply + 1] = created_at
end
redis.call('SET', KEYS[4], ARGV[#ARGV])
return reply
"""

# KEYS: tenant's subscriptions hash, books set, desired generation, then one subscribers hash per
# book. ARGV: tenant id, then one book id per book, last the generation token.
# Returns 1 (removed) or 0 (there was none) per book.
DELETE_SUBSCRIPTIONS = """
local reply = {}
local any = false
for i = 1, #KEYS - 3 do
  local ref = ARGV[i + 1]
  local removed = redis.call('HDEL', KEYS[1], ref)
  if removed == 1 then
    redis.call('HDEL', KEYS[3 + i], ARGV[1])
    if redis.call('HLEN', KEYS[3 + i]) == 0 then redis.call('SREM', KEYS[2], ref) end
    any = true
  end
  reply[i] = removed
end
if any then redis.call('SET', KEYS[3], ARGV[#ARGV]) end
return reply
"""

# KEYS: generation keys. ARGV: one fresh token per key. Returns each key's token; a key that has
# none yet (a store written only before generations existed, or emptied since) is given its
# fresh token, so that the state it names from now on is never confused with an earlier one.
GENERATIONS = """
local reply = {}
for i, key in ipairs(KEYS) do
  local token = redis.call('GET', key)
  if not token then
    token = ARGV[i]
    redis.call('SET', key, token)
  end
  reply[i] = token
end
return reply
"""

# A key's "usable until" (the earlier of expiry and revocation; '+inf' for never) is also its
# score in the tenant's live-keys zset, so counting usable keys is one ZCOUNT, not a scan of the
# tenant's whole key history. A tenant without that zset (keys created before it existed) gets it
# built from its key history once.
_LIVE_KEYS = """
local function until_of(expires, revoked)
  local t = math.huge
  if expires and expires ~= '' then t = math.min(t, tonumber(expires)) end
  if revoked and revoked ~= '' then t = math.min(t, tonumber(revoked)) end
  return t
end
local function score(t)
  if t == math.huge then return '+inf' end
  return string.format('%d', t)
end
local function ensure_live(base, tenant, live, history)
  if redis.call('EXISTS', live) == 1 or redis.call('EXISTS', history) == 0 then return end
  for _, id in ipairs(redis.call('ZRANGE', history, 0, -1)) do
    local f = redis.call('HMGET', base .. 'key:' .. id, 'expires_at', 'revoked_at')
    redis.call('ZADD', live, score(until_of(f[1], f[2])), id)
  end
end
"""

# KEYS: key hash, key-hash pointer, tenant's keys zset, tenant's live-keys zset, parent key hash
# (or any key when there is no parent), parent's children set (likewise).
# ARGV: store base, tenant id, key id, created_at (= now), usable limit, parent id or '',
# requested expires_at or '', then the key's other field/value pairs.
# Returns {1, stored expires_at or ''}, {-2} when the limit is reached, {-3} when the parent is
# not usable now.
CREATE_KEY = (
    _LIVE_KEYS
    + """
local now = tonumber(ARGV[4])
local expires = math.huge
if ARGV[7] ~= '' then expires = tonumber(ARGV[7]) end
if ARGV[6] ~= '' then
  if redis.call('EXISTS', KEYS[5]) == 0 then return {-3} end
  local p = redis.call('HMGET', KEYS[5], 'expires_at', 'revoked_at')
  local parent_until = until_of(p[1], p[2])
  if parent_until <= now then return {-3} end
  expires = math.min(expires, parent_until)
end
ensure_live(ARGV[1], ARGV[2], KEYS[4], KEYS[3])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[5]) then return {-2} end
local stored = ''
if expires ~= math.huge then stored = score(expires) end
redis.call('HSET', KEYS[1], 'expires_at', stored, 'parent_id', ARGV[6], unpack(ARGV, 8))
redis.call('SET', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], now, ARGV[3])
redis.call('ZADD', KEYS[4], score(expires), ARGV[3])
if ARGV[6] ~= '' then redis.call('SADD', KEYS[6], ARGV[3]) end
return {1, stored}
"""
)

# KEYS: the key's hash. ARGV: store base, revocation time, key id, the key to spare or ''.
# Only ever moves a revocation earlier, for the key and, transitively, every key minted from it.
# A key whose revocation did not move already ends no later than ``at``, and so does everything
# minted from it (a minted key never outlives its parent), so the walk stops there. The key to
# spare (a successor revoking its parent in a rotation) is detached from its parent instead, with
# everything minted from it. Returns 0 for an unknown key.
REVOKE_KEY = (
    _LIVE_KEYS
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local base, at = ARGV[1], tonumber(ARGV[2])
local pending = {ARGV[3]}
while #pending > 0 do
  local id = table.remove(pending)
  local hash = base .. 'key:' .. id
  local f = redis.call('HMGET', hash, 'revoked_at', 'expires_at', 'tenant_id')
  if f[3] and (not f[1] or f[1] == '' or tonumber(f[1]) > at) then
    redis.call('HSET', hash, 'revoked_at', ARGV[2])
    local live = base .. 'tenant-live-keys:' .. f[3]
    ensure_live(base, f[3], live, base .. 'tenant-keys:' .. f[3])
    redis.call('ZADD', live, 'XX', 'LT', score(until_of(f[2], ARGV[2])), id)
    local children = base .. 'key-children:' .. id
    for _, child in ipairs(redis.call('SMEMBERS', children)) do
      if child == ARGV[4] then
        redis.call('SREM', children, child)
      else
        table.insert(pending, child)
      end
    end
  end
end
return 1
"""
)

# KEYS: key hashes. ARGV: one last-used time per key. Only ever moves last_used_at later.
TOUCH_KEYS = """
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    local current = redis.call('HGET', key, 'last_used_at')
    if not current or current == '' or tonumber(current) < tonumber(ARGV[i]) then
      redis.call('HSET', key, 'last_used_at', ARGV[i])
    end
  end
end
return 0
"""

# KEYS: a hash. ARGV: field/value pairs. Writes them only if the hash exists; returns 1 if it did.
UPDATE_IF_EXISTS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""

# KEYS: lease key. ARGV: owner, ttl ms.
TRY_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

# KEYS: lease key. ARGV: owner.
RELEASE_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS: audit sequence, the log of every scope, the event's scope's log, the list of the version
# before scopes, that list's scope's log. ARGV: event JSON, events a scope keeps.
# An event is a member "<seq>|<json>" scored by its sequence number in the whole log and in its
# scope's; the scope's oldest beyond what it keeps leave both. The first append after an upgrade
# moves the old list (newest first) into the scope "legacy", oldest first.
APPEND_AUDIT = """
local keep = tonumber(ARGV[2])
local function add(json, scope)
  local seq = redis.call('INCR', KEYS[1])
  local member = seq .. '|' .. json
  redis.call('ZADD', KEYS[2], seq, member)
  redis.call('ZADD', scope, seq, member)
  local excess = redis.call('ZCARD', scope) - keep
  if excess > 0 then
    local old = redis.call('ZRANGE', scope, 0, excess - 1)
    redis.call('ZREMRANGEBYRANK', scope, 0, excess - 1)
    redis.call('ZREM', KEYS[2], unpack(old))
  end
end
if redis.call('TYPE', KEYS[4])['ok'] == 'list' then
  local old = redis.call('LRANGE', KEYS[4], 0, -1)
  for i = #old, 1, -1 do add(old[i], KEYS[5]) end
  redis.call('DEL', KEYS[4])
end
add(ARGV[1], KEYS[3])
return 1
"""
