--[[
common.lua: what the algorithm fragments share. Sluice assembles one script from
common.lua, one fragment per algorithm and decide.lua (the dispatcher, whose header describes
KEYS, ARGV and the reply).

Numbers: every value the algorithms compute is an integer below 2^53, which Lua's doubles hold
exactly (dev.sluice.algorithm.RateAlgorithm#validate bounds the parameters). Divisions are
corrected so floor and ceiling are exact, and numbers are written to Redis with '%d': Lua's
tostring keeps only 14 significant digits.

Each fragment adds ALGORITHMS[<id>] = function(key, now, limit, window, burst, max_delay, cost)
returning, like dev.sluice.algorithm.Verdict:
  allowed, remaining_now, reset_now, remaining_after, reset_after, delay, retry, commit
where the *_now figures hold when nothing is taken, the *_after figures and delay when the
request is admitted, retry when it is denied, and commit() (admitted only) writes the new state
with its expiry. A fragment reads its key and writes nothing; only commit() writes.
]]
local MARGIN = 1000 -- RateAlgorithm.EXPIRY_MARGIN_MS: expiry beyond "back to full", absorbs clock skew

local function floor_div(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

local function ceil_div(a, b)
  return -floor_div(-a, b)
end

local function int(n)
  return string.format('%d', n)
end

-- The captures of PATTERN in the string at KEY; nothing when the key is absent or holds another
-- algorithm's state (after a rule changed algorithm: the client then starts afresh).
local function read_string(key, pattern)
  local v = redis.pcall('GET', key)
  if type(v) ~= 'string' then
    return nil
  end
  return string.match(v, pattern)
end

local ALGORITHMS = {}

-- How far a stored time (whole ms plus a remainder in [0, limit)) is ahead of now, in units of
-- ms x limit; 0 once it has passed. A lead beyond max_lead_ms is capped (Gcra.lead).
local function lead(ms, remainder, now, limit, max_lead_ms)
  if ms < now then
    return 0
  end
  return math.min(ms - now, max_lead_ms) * limit + remainder
end
