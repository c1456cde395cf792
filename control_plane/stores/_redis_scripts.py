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

# KEYS: tenant hash, tenant's subscriptions hash, book's subscribers hash, books set.
# ARGV: book id, tenant id, the wish ("replicas:depth"), created_at. created_at stays last in the
# subscription's value, so that values written before depth existed are read the same way.
# Returns {1 created | 0 updated, created_at}, {-1} unknown tenant, {-2} max_markets reached.
PUT_SUBSCRIPTION = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local existing = redis.call('HGET', KEYS[2], ARGV[1])
local created_at = ARGV[4]
local created = 1
if existing then
  created_at = string.match(existing, ':(%d+)$')
  created = 0
else
  local limit = tonumber(redis.call('HGET', KEYS[1], 'max_markets'))
  if redis.call('HLEN', KEYS[2]) >= limit then return {-2} end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3] .. ':' .. created_at)
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('SADD', KEYS[4], ARGV[1])
return {created, created_at}
"""

# KEYS: tenant's subscriptions hash, book's subscribers hash, books set. ARGV: book id, tenant id.
DELETE_SUBSCRIPTION = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[2])
if redis.call('HLEN', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[1]) end
return 1
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
