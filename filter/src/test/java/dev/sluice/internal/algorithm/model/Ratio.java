package dev.sluice.internal.algorithm.model;

import java.math.BigInteger;

/** An exact rational number: the models compute with these so that no rounding can hide. */
record Ratio(BigInteger num, BigInteger den) implements Comparable<Ratio> {

    static final Ratio ZERO = of(0);

    Ratio {
        if (den.signum() == 0) throw new ArithmeticException("division by zero");
        if (den.signum() < 0) {
            num = num.negate();
            den = den.negate();
        }
        BigInteger g = num.gcd(den);
        if (!g.equals(BigInteger.ONE) && g.signum() != 0) {
            num = num.divide(g);
            den = den.divide(g);
        }
    }

    static Ratio of(long n) {
        return new Ratio(BigInteger.valueOf(n), BigInteger.ONE);
    }

    static Ratio of(long n, long d) {
        return new Ratio(BigInteger.valueOf(n), BigInteger.valueOf(d));
    }

    Ratio plus(Ratio o) {
        return new Ratio(num.multiply(o.den).add(o.num.multiply(den)), den.multiply(o.den));
    }

    Ratio minus(Ratio o) {
        return new Ratio(num.multiply(o.den).subtract(o.num.multiply(den)), den.multiply(o.den));
    }

    Ratio times(Ratio o) {
        return new Ratio(num.multiply(o.num), den.multiply(o.den));
    }

    Ratio times(long n) {
        return new Ratio(num.multiply(BigInteger.valueOf(n)), den);
    }

    Ratio min(Ratio o) {
        return compareTo(o) <= 0 ? this : o;
    }

    Ratio max(Ratio o) {
        return compareTo(o) >= 0 ? this : o;
    }

    long floor() {
        BigInteger[] qr = num.divideAndRemainder(den);
        return qr[1].signum() < 0 ? qr[0].longValueExact() - 1 : qr[0].longValueExact();
    }

    long ceil() {
        BigInteger[] qr = num.divideAndRemainder(den);
        return qr[1].signum() > 0 ? qr[0].longValueExact() + 1 : qr[0].longValueExact();
    }

    @Override
    public int compareTo(Ratio o) {
        return num.multiply(o.den).compareTo(o.num.multiply(den));
    }

    @Override
    public String toString() {
        return den.equals(BigInteger.ONE) ? num.toString() : num + "/" + den;
    }
}
