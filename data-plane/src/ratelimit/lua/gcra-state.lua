-- Loaded in front of acquire.lua and topup.lua (redis.ts joins them into one script each): GCRA as in gcra.ts,
-- over local copies of the TATs a script call touches, so each key is read once (getTat) and written once, at
-- the end (writeTats), with %.17g so nothing is lost between calls. `out` is the script's answer.
local P = 60000
local EPS = 0.01
local out = {}
local tatOf, tatPx, tatOrder = {}, {}, {}

local function getTat(key)
  local t = tatOf[key]
  if t == nil then
    t = tonumber(redis.call('GET', key) or '0')
    tatOf[key] = t
  end
  return t
end

local function setTat(key, tat, now)
  if tatPx[key] == nil then tatOrder[#tatOrder + 1] = key end
  tatOf[key] = tat
  tatPx[key] = math.ceil(tat - now) + 1000
end

local function gcra(now, tat, limit, cost)
  local interval = P / limit
  if cost > limit then cost = limit end
  local base = tat
  if now > base then base = now end
  local newTat = base + cost * interval
  local allowAt = newTat - P
  if allowAt - now > EPS then
    return false, newTat, math.ceil(allowAt - now - EPS), math.max(0, math.floor((P - (base - now)) / interval + EPS)), math.ceil(base - now - EPS)
  end
  return true, newTat, 0, math.max(0, math.floor((P - (newTat - now)) / interval + EPS)), math.ceil(newTat - now - EPS)
end

local function writeTats()
  for _, key in ipairs(tatOrder) do
    redis.call('SET', key, string.format('%.17g', tatOf[key]), 'PX', tatPx[key])
  end
end
