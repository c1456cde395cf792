"""Lua for the Redis control store's atomic operations (one script per operation).

Every script touches only keys that share the store's hash tag, so it runs on Redis Cluster too.
Absent hash fields read as ``false`` in Lua; optional times are stored as ``''`` when unset.
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

# KEYS: tenant hash, names hash. ARGV: id, new name key, field/value pairs...
# Returns 0 for an unknown tenant, -1 when the new name belongs to another tenant.
UPDATE_TENANT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local old = redis.call('HGET', KEYS[1], 'name_key')
if old ~= ARGV[2] then
  local owner = redis.call('HGET', KEYS[2], ARGV[2])
  if owner and owner ~= ARGV[1] then return -1 end
  if old then redis.call('HDEL', KEYS[2], old) end
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
return 1
"""

# KEYS: tenant hash, tenant's subscriptions hash, books set, then one subscribers hash per book.
# ARGV: tenant id, then per book: book id, the wish ("replicas:depth"), created_at. created_at
# stays last in the subscription's value, so that values written before depth existed are read
# the same way. The markets the call would add are counted against max_markets once, before
# anything is written: all of them fit, or nothing changes.
# Returns {1, created 1|0, created_at, ...} per book, {-1} unknown tenant, or
# {-2, markets it would add, markets the tenant may still add} when max_markets is in the way.
PUT_SUBSCRIPTIONS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local books = #KEYS - 3
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
  redis.call('HSET', KEYS[3 + i], ARGV[1], wish)
  redis.call('SADD', KEYS[3], ref)
  reply[#reply + 1] = created
  reply[#reply + 1] = created_at
end
return reply
"""

# KEYS: tenant's subscriptions hash, books set, then one subscribers hash per book.
# ARGV: tenant id, then one book id per book. Returns 1 (removed) or 0 (there was none) per book.
DELETE_SUBSCRIPTIONS = """
local reply = {}
for i = 1, #KEYS - 2 do
  local ref = ARGV[i + 1]
  local removed = redis.call('HDEL', KEYS[1], ref)
  if removed == 1 then
    redis.call('HDEL', KEYS[2 + i], ARGV[1])
    if redis.call('HLEN', KEYS[2 + i]) == 0 then redis.call('SREM', KEYS[2], ref) end
  end
  reply[i] = removed
end
return reply
"""

# KEYS: key hash. ARGV: revocation time. Only ever moves the revocation earlier.
REVOKE_KEY = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local current = redis.call('HGET', KEYS[1], 'revoked_at')
if not current or current == '' or tonumber(current) > tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'revoked_at', ARGV[1])
end
return 1
"""

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
