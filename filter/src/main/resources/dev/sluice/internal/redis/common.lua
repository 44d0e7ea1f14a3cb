--[[
common.lua: what the algorithm fragments share. Sluice assembles one script from
common.lua, one fragment per algorithm and decide.lua (the dispatcher, whose header describes
KEYS, ARGV and the reply).

Cost: Redis runs the whole script body on every call, so every function defined here is a
closure created per call, and tonumber, string.match and string.format each cost a few thousand
CPU instructions. The fragments are therefore plain local functions (no tables, no closures
built per decision), parse only the arguments their algorithm uses, and format a state with one
string.format. Numeric strings are parsed as `s + 0`, not tonumber(s): Lua 5.1's tonumber parses
a string twice (lua_isnumber, then lua_tonumber), each a strtod.

Numbers: every value the algorithms compute is an integer below 2^53, which Lua's doubles hold
exactly (dev.sluice.internal.algorithm.RateAlgorithm#validate bounds the parameters). Divisions are
corrected so floor and ceiling are exact, and numbers are written to Redis with '%d': Lua's
tostring keeps only 14 significant digits.

Each fragment is a local function of (key, now, limit, window, ...its parameters..., cost)
returning, like dev.sluice.internal.algorithm.Verdict:
  allowed, remaining_now, reset_now, next_now, remaining_after, reset_after, next_after, delay, retry, state, ttl
where next is the time until remaining grows (0: it cannot grow by waiting), the *_now figures
hold when nothing is taken, the *_after figures and delay when the
request is admitted, retry when it is denied, and state and ttl (admitted only) what decide.lua
writes: SET key state PX ttl (sliding-window-log: see its fragment). A fragment reads its key
and writes nothing.
]]
local MARGIN = 1000 -- RateAlgorithm.EXPIRY_MARGIN_MS: expiry beyond "back to full", absorbs clock skew
local floor, min, max = math.floor, math.min, math.max
local format, match = string.format, string.match

local function floor_div(a, b)
  local q = floor(a / b)
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

-- The captures of PATTERN in the string at KEY; nothing when the key is absent or holds another
-- algorithm's state (after a rule changed algorithm: the client then starts afresh).
local function read_string(key, pattern)
  local v = redis.pcall('GET', key)
  if type(v) ~= 'string' then
    return nil
  end
  return match(v, pattern)
end

-- How far a stored time (whole ms plus a remainder in [0, limit)) is ahead of now, in units of
-- ms x limit; 0 once it has passed. A lead beyond max_lead_ms is capped (Gcra.lead).
local function lead(ms, remainder, now, limit, max_lead_ms)
  if ms < now then
    return 0
  end
  return min(ms - now, max_lead_ms) * limit + remainder
end
