# Prints a script as RedisEngine assembles it from its Lua resources: each line holding only
# `--[[ name.lua ]]` replaced by that resource up to its first section, each `--[[ name.lua#section ]]`
# by that section of it (from the line `--[[ #section ]]` to the next such line), recursively.
# Usage: awk -v dir=RESOURCE_DIR -v main=decide-one.lua -f bench/assemble.awk
# (an older tree's resources, without sections, assemble the same way)
function splice(f, section,   line, parts, name, sec, on, hash) {
  on = (section == "")
  while ((getline line < f) > 0) {
    if (line ~ /^--\[\[ #[a-z-]+ \]\]$/) {
      if (on) break
      sec = line; sub(/^--\[\[ #/, "", sec); sub(/ \]\]$/, "", sec)
      on = (sec == section)
      continue
    }
    if (!on) continue
    if (line ~ /^[ \t]*--\[\[ [a-z-]+\.lua(#[a-z-]+)? \]\]$/) {
      split(line, parts, " "); name = parts[2]; sec = ""
      hash = index(name, "#")
      if (hash) { sec = substr(name, hash + 1); name = substr(name, 1, hash - 1) }
      splice(dir "/" name, sec)
    } else print line
  }
  close(f)
}
BEGIN { splice(dir "/" main, ""); exit }
