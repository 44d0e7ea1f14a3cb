--[[
decide-one.lua: one request per call (RedisEngine's calls that go alone, and every call on a
Redis Cluster). KEYS, ARGV[1], ARGV[2] and the reply: decide.lua's keys, request, tokens and
return value.
]]
--[[ decide.lua ]]
return decide(0, #KEYS, ARGV[1], ARGV[2])
