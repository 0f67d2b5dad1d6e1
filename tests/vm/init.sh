#!/bin/busybox sh
# /init of the test VM (tests/vm/mkinitramfs packs it).
#
# Mounts the host's root read-only over 9p and the run's output folder
# read-write, loads the modules the harness asked for, runs the command
# in a chroot of the host root (so host binaries run unchanged), then
# saves the exit status and dmesg and powers off.
#
# No kernel report is lost to the ring buffer wrapping: the log is saved
# once the modules are loaded (dmesg-boot.txt), then KERN_WARNING and worse
# go to the console (which the host keeps) as they happen, and it is saved
# again at the end (dmesg.txt).
#
# What the command leaves running does not keep init waiting: it is listed
# (leftovers.txt) and killed; one still there 10 s after SIGKILL is stuck
# in the kernel, and its kernel stack is kept.
#
# With VM_KMEMLEAK=1, leaks: what kmemleak finds at boot is set aside
# (kmemleak-boot.txt) before the modules load; what it finds after the
# command, then after unloading npu, goes to kmemleak.txt.
/bin/busybox --install -s /bin
export PATH=/bin

fail() {
	echo "vm-init: $*" >&2
	if grep -q ' /out ' /proc/mounts; then
		echo 125 >/out/status
		dmesg >/out/dmesg.txt
		umount /out
	fi
	poweroff -f
}

# kmemleak: scan twice, a pause before each (objects younger than 5 s are
# not reported, and deferred frees get to run), and list the suspects.
KML=/sys/kernel/debug/kmemleak
kml_scan() {
	sleep 5; echo scan >$KML || return
	sleep 5; echo scan >$KML || return
	cat $KML
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

for m in $(cat /etc/modules.list); do
	insmod "/lib/modules/$m" || fail "cannot load $m"
done

P9="trans=virtio,version=9p2000.L,msize=524288"
mkdir -p /out /host
mount -t 9p -o "$P9" out /out || fail "cannot mount the output share"
[ -f /out/run.env ] || fail "no run.env in the output share"
. /out/run.env

mount -t 9p -o "$P9,ro,cache=loose" hostroot /host || fail "cannot mount the host root"
mount --bind /proc /host/proc
mount --bind /sys /host/sys
mount --bind /dev /host/dev
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t devpts devpts /host/dev/pts
# The guest gets its own writable /tmp, but paths of the run that live
# under the host's /tmp (a checkout in /tmp, say) must stay visible.
mkdir -p /hosttmp
mount --bind /host/tmp /hosttmp
mount -t tmpfs tmpfs /host/tmp
for p in $VM_KEEP; do
	case "$p" in
	/tmp/?*)
		mkdir -p "/host$p"
		mount --bind "/hosttmp/${p#/tmp/}" "/host$p" || fail "cannot keep $p visible"
		;;
	esac
done
mount -t tmpfs tmpfs /host/run
mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null
# An output folder under /tmp lives on the tmpfs just mounted there.
mkdir -p "/host$VM_OUT" 2>/dev/null
mount --bind /out "/host$VM_OUT" || fail "cannot bind the output share at $VM_OUT"

if [ "$VM_KMEMLEAK" = 1 ]; then
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	if [ -w $KML ] && kml_scan >/out/kmemleak-boot.txt; then
		echo clear >$KML
	else
		echo "kmemleak unavailable: $KML cannot be used" >/out/kmemleak.txt
		echo "vm-init: kmemleak unavailable" >&2
	fi
fi

# Kernel modules from the host tree, dependencies first, then ours.
for m in $VM_MODULES; do
	insmod "/host$m" || fail "cannot load $m"
done

dmesg >/out/dmesg-boot.txt
dmesg -n 5

# The command's output goes to the console and output.log through a FIFO:
# init waits for the command, not for whatever it left running.
mkfifo /cmd.out
tee /out/output.log </cmd.out &
tee_pid=$!
chroot /host /bin/bash "$VM_OUT/cmd.sh" </dev/null >/cmd.out 2>&1
# cmd.sh writes its own status; a missing one means it was killed.
[ -f /out/status ] || echo 125 >/out/status

# Processes the command left behind are listed and killed; one that
# SIGKILL cannot end within 10 s is stuck in the kernel, and its kernel
# stack goes to leftovers.txt (the harness counts it as kernel trouble).
init_cmd=$(tr '\0' ' ' </proc/1/cmdline)
alive() {	# PIDs of processes but init, its subshells and tee; kernel threads
	local p cmd	# have no command line, zombies are gone already
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[ "$p" = "$tee_pid" ] && continue
		cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
		[ -n "$cmd" ] && [ "$cmd" != "$init_cmd" ] || continue
		grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && continue
		echo "$p"
	done
}
describe() {	# PID: pid, state, name, command line
	echo "$1 $(grep '^State:' "/proc/$1/status" 2>/dev/null | cut -f2) $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)"
}
left=$(alive)
if [ -n "$left" ]; then
	{
		echo "# processes the command left running"
		for p in $left; do describe "$p"; done
	} >/out/leftovers.txt
	echo "vm-init: the command left $(echo $left | wc -w) processes running; killing them" >&2
	kill -KILL $left 2>/dev/null
	# 10 s by the clock: on a loaded host one look through /proc can take
	# seconds, and a count of looks let a 60 s sleeper finish unseen.
	end=$(($(date +%s) + 10))
	while [ "$(date +%s)" -lt "$end" ] && [ -n "$(alive)" ]; do
		sleep 0.1
	done
	stuck=$(alive)
	if [ -n "$stuck" ]; then
		echo "vm-init: processes stuck in the kernel: $(echo $stuck)" >&2
		{
			echo "# stuck in the kernel: still there 10 s after SIGKILL"
			for p in $stuck; do
				describe "$p"
				cat "/proc/$p/stack" 2>/dev/null
			done
		} >>/out/leftovers.txt
	fi
fi
# tee ends once every writer of the FIFO is gone; a stuck one may not be.
for i in $(seq 20); do
	grep -q '^State:.*[RSD]' "/proc/$tee_pid/status" 2>/dev/null || break
	sleep 0.1
done
kill "$tee_pid" 2>/dev/null
wait "$tee_pid" 2>/dev/null

# rmmod, waiting out fences whose last free (an RCU callback) still holds the module.
rmmod_settled() {
	n=0
	while [ $n -lt 20 ]; do
		rmmod npu 2>/dev/null && return 0
		n=$((n + 1))
		sleep 0.1
	done
	rmmod npu
}

if [ "$VM_KMEMLEAK" = 1 ] && [ ! -f /out/kmemleak.txt ]; then
	echo "vm-init: scanning for leaks" >&2
	{
		echo "# kmemleak after the command"
		kml_scan || echo "kmemleak unavailable: the scan failed"
		if grep -q '^npu ' /proc/modules; then
			echo clear >$KML
			if rmmod_settled; then
				echo "# kmemleak after rmmod npu"
				kml_scan || echo "kmemleak unavailable: the scan failed"
			else
				echo "# rmmod npu failed"
			fi
		fi
	} >/out/kmemleak.txt 2>&1
fi

dmesg >/out/dmesg.txt
sync
umount "/host$VM_OUT" 2>/dev/null
umount /out
poweroff -f
