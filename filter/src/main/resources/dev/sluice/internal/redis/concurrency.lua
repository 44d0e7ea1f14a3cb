--[[
concurrency.lua: dev.sluice.internal.algorithm.Concurrency, a fragment of decide.lua.
Sections: #write takes the slot; #give-back releases it.
State: a sorted set under the rule's key with ':slots' appended (RedisEngine), one member per slot
held: the 8 bytes of the token of the request holding it, scored by the moment its lease ends (ms);
PEXPIRE = the latest lease's end + MARGIN. `window` is the lease. The slots held are those whose
lease ends after now; ended ones are removed when a slot is taken. In modes 0 to 2 the rule ends
with its take's token ('c8', after all else): the member a slot is taken under. A key of another
type counts as no slot held, and is replaced when a slot is taken. A take sent again under the same
token (a resend underneath) finds its slot held and takes it again: its own slot does not refuse
it. Released (mode 3) by #give-back;
renewed by renew.lua. Not a rate: retry, reset and next are a hint of a second (Concurrency.HINT_MS).
]]
local slot
if mode < 3 then
  slot, pos = decode('c8', request, pos)
end
local held = pcall('ZCOUNT', key, format('(%d', now), '+inf')
log_foreign = type(held) ~= 'number'
if log_foreign then
  held = 0
end
if held + cost > limit and slot and not log_foreign then
  -- the same take again (a Cluster call resent after its connection dropped past Redis's answer): its own slot,
  -- held under its token, is not another's; looked up on a denial only, so an admission pays nothing for it
  local mine = call('ZSCORE', key, slot)
  if mine and tonumber(mine) > now then
    held = held - 1
  end
end
remaining_now, reset_now, next_now = limit - held, 1000, 1000
if held + cost > limit then
  admits, retry = false, 1000
else
  admits, remaining_after, reset_after, next_after, delay = true, limit - held - cost, 1000, 1000, 0
  state, ttl, taken_ms, taken_fraction, taken_given = slot, window + MARGIN, now + window, 0, 0
end
--[[ #write ]]
-- concurrency: the ended leases go, the slot is taken under the request's token
if log_foreign then
  call('DEL', key)
end
call('ZREMRANGEBYSCORE', key, '-inf', format('%d', now))
call('ZADD', key, format('%d', taken_ms), state)
-- no other slot held (the trim emptied the set, or left this take's own slot, taken again): its lease is the key's
if remaining_now == limit or call('PTTL', key) < ttl then
  call('PEXPIRE', key, format('%d', ttl))
end
--[[ #give-back ]]
-- released: removing a member twice removes it once, so no once key
pcall('ZREM', key, string.sub(tokens, 8 * i - 7, 8 * i))
taken_ms = nil
