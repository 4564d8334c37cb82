#!/usr/bin/env perl
# iotsecbench's stand-in for OpenSSL's util/mkdef.pl, which the crates.io openssl-src crate
# leaves out (it builds static libraries only). It writes the GNU ld version script of a shared
# libcrypto/libssl from the ordinals file: one node per OpenSSL version, each inheriting the
# previous one, so programs linked against Debian's OpenSSL 3.0 find their versioned symbols.
use strict;
use warnings;

my %option;
while (@ARGV) {
    my $key = shift @ARGV;
    $option{$1} = shift @ARGV if $key =~ /^--(\w+)$/;
}
open(my $ordinals, '<', $option{ordinals}) or die "mkdef.pl: $option{ordinals}: $!\n";
my %symbols;
while (my $line = <$ordinals>) {
    next if $line =~ /^\s*(#|$)/;
    my ($name, undef, $version, $info) = split ' ', $line;
    push @{ $symbols{$version} }, $name if $info =~ /^EXIST::/;
}
my @versions = sort {
    my @x = split /_/, $a;
    my @y = split /_/, $b;
    $x[0] <=> $y[0] || $x[1] <=> $y[1] || $x[2] <=> $y[2]
} keys %symbols;
my $previous = '';
for my $version (@versions) {
    (my $node = "OPENSSL_$version") =~ s/_(\d+)_(\d+)_(\d+)$/_$1.$2.$3/;
    print "$node {\n    global:\n";
    print "        $_;\n" for @{ $symbols{$version} };
    print "    local: *;\n" unless $previous;
    print "}", ($previous ? " $previous" : ""), ";\n";
    $previous = $node;
}
