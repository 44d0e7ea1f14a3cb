--[[
token-bucket.lua: dev.sluice.internal.algorithm.TokenBucket, a fragment of decide.lua.
State: struct '<Bdd' 4, tokens x window, ms (17 bytes); PX = time to a full bucket + MARGIN.
Tokens are scaled by the window, so a refill of limit per window adds elapsed * limit units.
The stored time never moves backwards: a caller whose clock lags refills nothing.
]]
local cap = burst * window
local tokens, at = cap, now
local stored = pcall('GET', key)
if stored and #stored == 17 then
  local tag, units, stamp = decode('<Bdd', stored)
  if tag == 4 then
    if units > cap then
      units = cap
    end
    if stamp > now then
      at = stamp
    end
    -- below 2^53 or not, the product compares exactly with a value below 2^50
    if (at - stamp) * limit < cap - units then
      tokens = units + (at - stamp) * limit
    end
  end
end
local skew = at - now
remaining_now, reset_now, next_now = (tokens - tokens % window) / window, 0, 0
if tokens < cap then
  local x = cap - tokens
  reset_now = skew + (x + -x % limit) / limit
  x = (remaining_now + 1) * window - tokens -- until one more whole token
  next_now = skew + (x + -x % limit) / limit
end
if cost > burst then
  admits, retry = false, window
elseif tokens < cost * window then
  local x = cost * window - tokens
  admits, retry = false, skew + (x + -x % limit) / limit
else
  local left = tokens - cost * window
  remaining_after = (left - left % window) / window
  local x = cap - left
  reset_after = skew + (x + -x % limit) / limit
  x = (remaining_after + 1) * window - left
  admits, next_after, delay = true, skew + (x + -x % limit) / limit, 0
  state, ttl = encode('<Bdd', 4, left, at), reset_after + MARGIN
end
