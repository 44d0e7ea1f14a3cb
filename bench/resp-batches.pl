#!/usr/bin/env perl
# Sends the same round trip ROUNDS times to a Redis and reads each answer before the next:
# the round trip is the file's commands (RESP, written by batch-cost.sh), which draw `replies`
# top-level replies. Usage: resp-batches.pl PORT FILE REPLIES ROUNDS
use strict; use warnings; use IO::Socket::INET;
my ($port, $file, $replies, $rounds) = @ARGV;
open(my $f, '<:raw', $file) or die "$file: $!"; local $/; my $out = <$f>; close $f;
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') or die "connect: $!";
binmode $s;
my $buf = '';
sub need { my $n = shift; while (length($buf) < $n) { my $r = sysread($s, $buf, 65536, length $buf); die "closed" unless $r; } }
sub line { my $i; while (($i = index($buf, "\r\n")) < 0) { need(length($buf) + 1); } my $l = substr($buf, 0, $i); substr($buf, 0, $i + 2) = ''; $l }
sub reply {
  my $l = line(); my $t = substr($l, 0, 1); my $v = substr($l, 1);
  if ($t eq '$') { return if $v < 0; need($v + 2); substr($buf, 0, $v + 2) = ''; }
  elsif ($t eq '*') { reply() for 1 .. $v; }
  elsif ($t eq '-') { die "error reply: $v\n"; }
}
for (1 .. $rounds) { syswrite($s, $out) == length($out) or die "short write"; reply() for 1 .. $replies; }
