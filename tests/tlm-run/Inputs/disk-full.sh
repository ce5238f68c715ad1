# disk-full.test's steps, run inside its mount namespace: $1 is the full
# disk, $2 the examples folder, $3 tlm-run.
disk=$1
examples=$2
tlm_run=$3
head -c 1024 /dev/urandom > "$disk/w.st"
cp "$disk/w.st" "$disk/../w.orig"
echo "before: $(wc -c < "$disk/w.st")"
"$tlm_run" init --config "$examples"/tiny.json --output "$disk/w.st" 2>&1
echo "exit $?"
cmp -s "$disk/w.st" "$disk/../w.orig" && same=same || same=changed
echo "after: $(wc -c < "$disk/w.st") $same"
echo "left:" $(ls -A "$disk")
"$tlm_run" quantize --config "$examples"/tiny.json --dtype q8_0 --output "$disk/w.st" 2>&1
echo "exit $?"
"$tlm_run" forward --config "$examples"/tiny.json --tokens "$(seq -s " " 1 64)" --output "$disk/logits.st" 2>&1
echo "exit $?"
echo "left:" $(ls -A "$disk")
(ulimit -v 400000; "$tlm_run" forward --config "$examples"/tiny.json --tokens "1 2" --no-cache 2>&1)
echo "exit $?"
"$tlm_run" forward --config "$examples"/tiny.json --tokens "1 2" --threads 100000 2>&1
echo "exit $?"
