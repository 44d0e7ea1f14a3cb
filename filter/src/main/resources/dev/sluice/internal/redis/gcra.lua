--[[
gcra.lua: dev.sluice.internal.algorithm.Gcra, a fragment of decide.lua.
State: struct '<Bdd' 6, TAT ms, remainder (the theoretical arrival time is ms + remainder / limit);
PX = time until the TAT + MARGIN. The emission interval window / limit is exactly `window` units
of ms x limit; the same answers as the token bucket.
]]
local cap = burst * window
local ahead = 0 -- how far the TAT is ahead of now, in ms x limit
local stored = pcall('GET', key)
if stored and #stored == 17 then
  local tag, ms, remainder = decode('<Bdd', stored)
  if tag == 6 and ms >= now then
    local lead = ms - now
    local max_lead = (cap + -cap % limit) / limit + window -- Gcra.maxLeadMs: beyond, any lead denies alike
    if lead > max_lead then
      lead = max_lead
    end
    ahead = lead * limit + remainder
  end
end
local x = cap - ahead
remaining_now, reset_now, next_now = (x - x % window) / window, (ahead + -ahead % limit) / limit, 0
if ahead > 0 then -- until one more whole token: ahead falls to cap - (tokens + 1) x window
  local whole = remaining_now
  if whole < 0 then
    whole = 0
  end
  x = ahead - cap + (whole + 1) * window
  next_now = (x + -x % limit) / limit
end
local after = ahead + cost * window
if cost > burst then
  admits, retry = false, window
elseif after > cap then
  x = after - cap
  admits, retry = false, (x + -x % limit) / limit
else
  x = cap - after
  remaining_after, reset_after = (x - x % window) / window, (after + -after % limit) / limit
  x = after - cap + (remaining_after + 1) * window
  admits, next_after, delay = true, (x + -x % limit) / limit, 0
  local whole = (after - after % limit) / limit
  state, ttl = encode('<Bdd', 6, now + whole, after - whole * limit), reset_after + MARGIN
end
