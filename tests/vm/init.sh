#!/bin/busybox sh
# /init of the test VM (tests/vm/mkinitramfs packs it).
#
# Mounts the host's root read-only over 9p and the run's output folder
# read-write, loads the modules the harness asked for, runs the command
# in a chroot of the host root (so host binaries run unchanged), then
# saves the exit status and dmesg and powers off.
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

# Kernel modules from the host tree, dependencies first, then ours.
for m in $VM_MODULES; do
	insmod "/host$m" || fail "cannot load $m"
done

chroot /host /bin/bash "$VM_OUT/cmd.sh" </dev/null 2>&1 | tee /out/output.log
# cmd.sh writes its own status; a missing one means it was killed.
[ -f /out/status ] || echo 125 >/out/status

dmesg >/out/dmesg.txt
sync
umount "/host$VM_OUT" 2>/dev/null
umount /out
poweroff -f
