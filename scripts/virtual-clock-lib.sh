# Sourced by the paper scripts: what running on cairn-bench's virtual device clock asks of
# their settings (CLOCK=virtual DEVICE=...).

# cairn_only NAME LIST: LIST without the engines the virtual clock cannot run (all but
# cairn's), saying which it drops; fails when none is left.
cairn_only() {
  local e kept=()
  for e in ${2//,/ }; do
    case $e in
      cairn | cairn:*) kept+=("$e") ;;
      *) echo "CLOCK=virtual: dropping $e from $1 (the virtual clock runs cairn's engines only)" >&2 ;;
    esac
  done
  if [ ${#kept[@]} -eq 0 ]; then
    echo "CLOCK=virtual: $1 ($2) has no cairn engine to run" >&2
    return 2
  fi
  (IFS=,; echo "${kept[*]}")
}

# virtual_device_and_out: checks DEVICE names a device model and puts the output under
# $OUT-virtual-$DEVICE (once), so wall and virtual results never mix.
virtual_device_and_out() {
  case $DEVICE in
    nvme | ssd | hdd) ;;
    *) echo "CLOCK=virtual needs DEVICE=nvme, ssd or hdd (got '$DEVICE')" >&2; exit 2 ;;
  esac
  OUT="${OUT%-virtual-"$DEVICE"}-virtual-$DEVICE"
}
