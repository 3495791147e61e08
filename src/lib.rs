pub mod xset;
