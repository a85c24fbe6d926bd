# Bash completion of voxfe-voxelize, voxfe-optimize, voxfe-analyze and
# voxfe-export (installed under each program's name, the name bash-completion
# loads it by). The options come from the program's own --help, so they are
# always the program's; other words complete to file names.

# The long options of PROGRAM's --help, one a line: "--name=" for those that
# take a value, "--name" for the others.
_voxfe_options() {
  "$1" --help 2>/dev/null |
    sed -n 's/^ \{1,\}\(-[^ ,], \)\{0,1\}\(--[A-Za-z0-9][A-Za-z0-9-]*\)\(\[\{0,1\}=\)\{0,1\}.*$/\2\3/p' |
    sed 's/\[=$/=/'
}

_voxfe() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  COMPREPLY=()
  [[ $cur == -* ]] || return 0 # bash's own file name completion
  local program=${COMP_WORDS[0]}
  if [[ -z ${_voxfe_cache[$program]+set} ]]; then
    _voxfe_cache[$program]=$(_voxfe_options "$program")
  fi
  mapfile -t COMPREPLY < <(compgen -W "${_voxfe_cache[$program]}" -- "$cur")
  # an option that takes a value: no space after its "="
  if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]]; then
    compopt -o nospace 2>/dev/null
  fi
  return 0
}

declare -gA _voxfe_cache 2>/dev/null || true
complete -o bashdefault -o default -F _voxfe voxfe-voxelize voxfe-optimize voxfe-analyze \
  voxfe-export
