-- refunds.lua: give-back.lua's refund counters, which count whole tokens (token-bucket) or whole ms
-- (gcra, leaky-bucket), rounded up per refund, modulo 2^52: the units a state keeps across a change
-- of figures (RateAlgorithm.addRefund). Defined once per script call, before decide.lua.
-- `ahead` of the algorithm's units, less what was given back since the take (`since` whole `unit`s).
local function bound(ahead, since, unit)
  since = since % 4503599627370496
  if since * unit > ahead then -- inexact only far above any `ahead` (below 2^53)
    return 0
  end
  return ahead - since * unit
end
local function counted(refunded, refund, unit)
  local whole = (refund - refund % unit) / unit
  if refund % unit > 0 then
    whole = whole + 1
  end
  return (refunded + whole) % 4503599627370496
end
