--[[
decide-batch.lua: several requests in one call (SharedRoundTrips' batch, on standalone and
Sentinel), each decided by decide.lua in turn, in order, as it would have been by a call of its
own, but for one script call and one TIME for the lot.

KEYS      every request's keys, request after request
ARGV[1]   per request four bytes: its number of keys (at most 255), its number of arguments (1, or
          2 for a settlement), the length of its request (its first argument; two bytes, little-
          endian: at most 65,535)
ARGV[2]   every request's request, request after request: one string, read where each begins (a
          string per request costs Redis ~1,300 instructions more per request to make, in ARGV)
ARGV[3...] the settlements' tokens (their second argument), settlement after settlement
Reply     an array: per request, decide.lua's reply, or an error reply where its decision failed

Isolation: each request runs under Lua's pcall, so an error (a key of another type under a give-
back's once key, a state whose expiry would be invalid) fails that request alone: its error is its
reply, and the requests before and after it are decided as if it had not been there (each begins
where the layout says, whatever the one before it read); what it wrote before its
error stays, as it would after the error of a call of its own. A decision writes nothing before it
has read and decided every rule, and its writes do not fail on data (PSETEX overwrites any type, the
log deletes a key of another type first), so only a give-back of several rules can stop half way:
a later rule's once key of another type, after an earlier rule was given back.
]]
local call, pcall, protect = redis.call, redis.pcall, pcall -- protect: Lua's own pcall
local encode, decode, format, concat = struct.pack, struct.unpack, string.format, table.concat
local MARGIN = 1000 -- RateAlgorithm.EXPIRY_MARGIN_MS: expiry beyond "back to full", absorbs clock skew
--[[ refunds.lua ]]
local redis_now, px_ttl, px, tail_at, tail -- one TIME for the batch; the last TTL written, and its text; the
-- last time a window's state reply was followed by, and its bytes

local function decide(base, n_keys, request, at, tokens)
  --[[ decide.lua ]]
end

local layout, replies = { string.byte(ARGV[1], 1, -1) }, {} -- one call for the lot: a decode per request costs ~1k
local requests = ARGV[2]
local key, at, arg = 0, 1, 3
for r = 1, #layout / 4 do
  local keys, args = layout[4 * r - 3], layout[4 * r - 2]
  local ok, reply = protect(decide, key, keys, requests, at, args == 2 and ARGV[arg] or nil)
  if not ok then
    -- an error raised by redis.call is a table {err = ...}; Lua's own, a string
    reply = { err = type(reply) == 'table' and reply.err or tostring(reply) }
  end
  replies[r] = reply
  key, at, arg = key + keys, at + layout[4 * r - 1] + 256 * layout[4 * r], arg + args - 1
end
return replies
