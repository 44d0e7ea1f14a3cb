--[[
decide-one.lua: one request per call (RedisEngine's calls that go alone, and every call on a
Redis Cluster). KEYS, ARGV[1], ARGV[2] and the reply: decide.lua's keys, request, tokens and
return value. decide.lua is this script's body, not a function: a function and its closure would
cost each call some 4,000 instructions (bench/batch-cost.sh).
]]
local call, pcall = redis.call, redis.pcall
local encode, decode, format, concat = struct.pack, struct.unpack, string.format, table.concat
local MARGIN = 1000 -- RateAlgorithm.EXPIRY_MARGIN_MS: expiry beyond "back to full", absorbs clock skew
--[[ refunds.lua ]]
local redis_now, px_ttl, px, tail_at, tail
local base, n_keys, request, at, tokens = 0, #KEYS, ARGV[1], 1, ARGV[2]
--[[ decide.lua ]]
